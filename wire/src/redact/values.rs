//! Masking the values the recorder read out of a frame (its id, method,
//! session), which the store keeps beside the frame's bytes.

use super::Redactor;

impl Redactor {
    /// `value`, a string read from a frame, masked as it would be inside the
    /// frame (secret query values of URLs, the pattern rules' matches);
    /// `None` when nothing was.
    pub fn mask_value(&self, value: &str) -> Option<String> {
        self.mask_string(value)
    }

    /// Masks each of `texts` in place, as [`Redactor::mask_value`] would.
    pub fn mask_values<'t>(&self, texts: impl IntoIterator<Item = &'t mut String>) {
        for text in texts {
            if let Some(masked) = self.mask_value(text) {
                *text = masked;
            }
        }
    }
}
