//! The app's pages: the trace list and one trace's view.

pub mod trace_list;
pub mod trace_view;
