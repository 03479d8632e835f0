//! The one reading of ACP messages: every crate that looks inside a
//! message (classification and previews, the session model, the checker,
//! the OTLP mapping, diff and replay) reads it through the shapes here, so
//! one message reads the same everywhere.
//!
//! Two rules hold for every shape:
//! - a member written twice counts as its last, as peers' parsers read it
//!   (JavaScript's `JSON.parse`, Python's `json`): the envelope keeps the
//!   last itself ([`Envelope::duplicate`] says it happened), the shapes
//!   below it are read with [`read_last`];
//! - a member of the wrong type reads as absent and the rest still reads
//!   ([`lenient`]): `"title": 7` loses the title, not the tool call.
//!
//! The shapes are borrowed: a string without escapes is not copied, and a
//! member no reader needs is skipped. They are tested against the official
//! `agent-client-protocol-schema` types (`tests` below): a message built
//! from those types reads the same through these shapes.

mod envelope;
mod kind;
pub mod lenient;
mod shapes;
#[cfg(test)]
mod tests;

pub use crate::frame::read_last;
pub use envelope::{Envelope, Routing};
pub use kind::{plain_update_kind, COUNTED_KINDS};
pub use shapes::*;

use serde::Deserialize;
use serde_json::value::RawValue;

/// A JSON string, borrowed when it has no escapes.
pub type Str<'a> = std::borrow::Cow<'a, str>;

/// The params, result and error of the message in `raw`, read in one pass;
/// all absent when `raw` is no JSON object.
pub fn message<'a>(raw: &'a [u8], keep: &'a mut Option<Vec<u8>>) -> Message<'a> {
    read_last(raw, keep).unwrap_or_default()
}

/// The params of the request or notification in `raw`.
pub fn params<'a>(raw: &'a [u8], keep: &'a mut Option<Vec<u8>>) -> Option<Params<'a>> {
    message(raw, keep).params
}

/// The result (all absent when there is none) and the error of the
/// response in `raw`.
pub fn reply<'a>(raw: &'a [u8], keep: &'a mut Option<Vec<u8>>) -> (Answer<'a>, Option<RpcError<'a>>) {
    let m = message(raw, keep);
    (m.result.unwrap_or_default(), m.error)
}

/// A member's text (from an [`Envelope`]) read as `T`; `None` when it is
/// absent or is no JSON object.
pub fn member<'a, T: Deserialize<'a>>(raw: Option<&'a RawValue>, keep: &'a mut Option<Vec<u8>>) -> Option<T> {
    let raw = raw?;
    if !raw.get().starts_with('{') {
        return None;
    }
    read_last(raw.get().as_bytes(), keep).ok()
}

/// An array member's objects (from a shape's `&RawValue` member), each read
/// as `T`: an element that is no object reads as `T::default()`, so the
/// count stays true; empty when the member is absent or no array.
pub fn items<'a, T: Deserialize<'a> + Default>(raw: Option<&'a RawValue>, keep: &'a mut Option<Vec<u8>>) -> Vec<T> {
    struct Items<T>(Option<Vec<T>>);
    impl<'de, T: Deserialize<'de> + Default> Deserialize<'de> for Items<T> {
        fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            lenient::list(d).map(Items)
        }
    }
    let Some(raw) = raw else { return Vec::new() };
    read_last::<Items<T>>(raw.get().as_bytes(), keep).ok().and_then(|i| i.0).unwrap_or_default()
}
