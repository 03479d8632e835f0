//! The app's pages: the trace list, one trace's view, two traces compared, and not found.

pub mod compare;
pub mod not_found;
pub mod trace_list;
pub mod trace_view;
