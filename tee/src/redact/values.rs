//! Masking the values the recorder read out of a frame (its id, method,
//! session), which the store keeps beside the frame's bytes.

use super::Redactor;

impl Redactor {
    /// `value`, a string read from a frame, with the pattern rules' matches
    /// masked, as they would be inside the frame; `None` when nothing was.
    pub fn mask_value(&self, value: &str) -> Option<String> {
        self.mask_patterns(value)
    }
}
