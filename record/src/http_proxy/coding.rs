//! A body's content coding, undone on the side for the recording.
//!
//! The proxy passes every body on as it came, compressed or not; what it
//! records is the message the body carries, so a `gzip` or `deflate`
//! coded body is decoded beside the bytes passed on. The proxy asks the
//! upstream only for codings it can decode ([`accepted`]); a body in any
//! other coding is recorded as it came, with a note saying so.

use axum::http::{header, HeaderMap, HeaderValue};
use flate2::write::{GzDecoder, ZlibDecoder};
use std::io::Write;

/// Compressed bytes decoded in one step: a deflate stream expands at most
/// about 1,032 times, so one step's output stays near 1 MiB however the
/// body was made.
const STEP: usize = 1024;

/// The codings the proxy decodes, by their names in `Content-Encoding`.
const DECODED: [&str; 3] = ["gzip", "x-gzip", "deflate"];

/// How a body is coded.
pub enum Coding {
    /// Not coded: its bytes are its message.
    Identity,
    Gzip(Box<GzDecoder<Vec<u8>>>),
    /// `deflate` is the zlib format (RFC 9110 8.4.1.2).
    Zlib(Box<ZlibDecoder<Vec<u8>>>),
    /// A coding the proxy does not decode (named), or one whose bytes did
    /// not decode: nothing more of the body is decoded.
    Undecodable(String),
}

impl Coding {
    /// The coding `headers` give a body.
    pub fn of(headers: &HeaderMap) -> Coding {
        let mut named = headers
            .get_all(header::CONTENT_ENCODING)
            .iter()
            .flat_map(|v| v.to_str().unwrap_or("(not text)").split(','))
            .map(|c| c.trim().to_ascii_lowercase())
            .filter(|c| !c.is_empty() && c != "identity");
        match (named.next(), named.next()) {
            (None, _) => Coding::Identity,
            (Some(c), None) if c == "gzip" || c == "x-gzip" => Coding::Gzip(Box::new(GzDecoder::new(Vec::new()))),
            (Some(c), None) if c == "deflate" => Coding::Zlib(Box::new(ZlibDecoder::new(Vec::new()))),
            (Some(c), None) => Coding::Undecodable(c),
            (Some(a), Some(b)) => Coding::Undecodable(format!("{a}, {b}")),
        }
    }

    /// The coding's name, for the notes.
    pub fn name(&self) -> &str {
        match self {
            Coding::Identity => "identity",
            Coding::Gzip(_) => "gzip",
            Coding::Zlib(_) => "deflate",
            Coding::Undecodable(name) => name,
        }
    }

    /// Decodes `coded`, handing the plain bytes to `plain` step by step;
    /// an error when they do not decode (the coding is then given up).
    pub fn decode(&mut self, coded: &[u8], plain: &mut dyn FnMut(&[u8])) -> Result<(), String> {
        for step in coded.chunks(STEP) {
            let out = match self {
                Coding::Identity => {
                    plain(step);
                    continue;
                }
                // The flush hands on what the step decoded, not a step later.
                Coding::Gzip(d) => d.write_all(step).and_then(|()| d.flush()).map(|()| std::mem::take(d.get_mut())),
                Coding::Zlib(d) => d.write_all(step).and_then(|()| d.flush()).map(|()| std::mem::take(d.get_mut())),
                Coding::Undecodable(_) => return Ok(()),
            };
            self.hand_on(out, plain)?;
        }
        Ok(())
    }

    /// The body ended: what the decoder still holds, or an error when the
    /// coded stream was cut short.
    pub fn finish(&mut self, plain: &mut dyn FnMut(&[u8])) -> Result<(), String> {
        let out = match self {
            Coding::Gzip(d) => d.try_finish().map(|()| std::mem::take(d.get_mut())),
            Coding::Zlib(d) => d.try_finish().map(|()| std::mem::take(d.get_mut())),
            Coding::Identity | Coding::Undecodable(_) => return Ok(()),
        };
        self.hand_on(out, plain)
    }

    fn hand_on(&mut self, out: std::io::Result<Vec<u8>>, plain: &mut dyn FnMut(&[u8])) -> Result<(), String> {
        match out {
            Ok(out) => {
                if !out.is_empty() {
                    plain(&out);
                }
                Ok(())
            }
            Err(e) => {
                let name = self.name().to_owned();
                *self = Coding::Undecodable(name);
                Err(e.to_string())
            }
        }
    }
}

/// The `Accept-Encoding` to send upstream for a client's: the codings the
/// proxy decodes, as the client weighed them; `identity` when the client
/// named none of them (a body the proxy could not read is never asked for).
pub fn accepted(client: &HeaderMap) -> HeaderValue {
    // No Accept-Encoding means any coding: then too the proxy asks for none.
    let values: Vec<&str> = client.get_all(header::ACCEPT_ENCODING).iter().filter_map(|v| v.to_str().ok()).collect();
    let kept: Vec<&str> = values
        .iter()
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .filter(|c| {
            let name = c.split(';').next().unwrap_or_default().trim().to_ascii_lowercase();
            DECODED.contains(&name.as_str()) || name == "identity"
        })
        .collect();
    match HeaderValue::from_str(&kept.join(", ")) {
        Ok(v) if !kept.is_empty() => v,
        _ => HeaderValue::from_static("identity"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::write::{GzEncoder, ZlibEncoder};
    use flate2::Compression;

    fn coded(name: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(header::CONTENT_ENCODING, HeaderValue::from_str(name).unwrap());
        h
    }

    fn decoded_at_every_split(coding: &str, bytes: &[u8]) -> Vec<Vec<u8>> {
        (0..=bytes.len())
            .map(|cut| {
                let mut c = Coding::of(&coded(coding));
                let mut out = Vec::new();
                let (a, b) = bytes.split_at(cut);
                c.decode(a, &mut |p| out.extend_from_slice(p)).unwrap();
                c.decode(b, &mut |p| out.extend_from_slice(p)).unwrap();
                c.finish(&mut |p| out.extend_from_slice(p)).unwrap();
                out
            })
            .collect()
    }

    #[test]
    fn gzip_and_deflate_decode_whatever_the_chunks() {
        let plain = br#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1}}"#.repeat(20);
        let mut gz = GzEncoder::new(Vec::new(), Compression::default());
        gz.write_all(&plain).unwrap();
        let gz = gz.finish().unwrap();
        let mut zl = ZlibEncoder::new(Vec::new(), Compression::default());
        zl.write_all(&plain).unwrap();
        let zl = zl.finish().unwrap();
        for out in decoded_at_every_split("gzip", &gz).into_iter().chain(decoded_at_every_split("deflate", &zl)) {
            assert_eq!(out, plain);
        }
    }

    #[test]
    fn a_cut_short_or_broken_stream_is_an_error_and_an_unknown_coding_decodes_nothing() {
        let mut gz = GzEncoder::new(Vec::new(), Compression::default());
        gz.write_all(&[b'x'; 10_000]).unwrap();
        let gz = gz.finish().unwrap();
        let mut c = Coding::of(&coded("gzip"));
        c.decode(&gz[..gz.len() / 2], &mut |_| {}).unwrap();
        assert!(c.finish(&mut |_| {}).is_err());
        let mut c = Coding::of(&coded("gzip"));
        assert!(c.decode(b"not gzip at all", &mut |_| {}).is_err());
        assert!(matches!(c, Coding::Undecodable(_)));
        let mut c = Coding::of(&coded("br"));
        let mut seen = 0;
        c.decode(b"whatever", &mut |p| seen += p.len()).unwrap();
        assert_eq!((seen, c.name()), (0, "br"));
        assert_eq!(Coding::of(&coded("gzip, br")).name(), "gzip, br");
        assert_eq!(Coding::of(&coded("identity")).name(), "identity");
    }

    #[test]
    fn a_decompression_bomb_comes_out_in_bounded_steps() {
        let mut gz = GzEncoder::new(Vec::new(), Compression::best());
        let zeros = vec![0u8; 1 << 20];
        for _ in 0..64 {
            gz.write_all(&zeros).unwrap();
        }
        let gz = gz.finish().unwrap();
        assert!(gz.len() < 100_000);
        let (mut biggest, mut total) = (0, 0);
        let mut c = Coding::of(&coded("gzip"));
        c.decode(&gz, &mut |p| {
            biggest = biggest.max(p.len());
            total += p.len();
        })
        .unwrap();
        c.finish(&mut |p| total += p.len()).unwrap();
        assert_eq!(total, 64 << 20);
        assert!(biggest <= 2 << 20, "one step gave {biggest} bytes");
    }

    #[test]
    fn upstream_is_asked_only_for_codings_the_proxy_decodes() {
        let ask = |v: Option<&str>| {
            let mut h = HeaderMap::new();
            if let Some(v) = v {
                h.insert(header::ACCEPT_ENCODING, HeaderValue::from_str(v).unwrap());
            }
            accepted(&h).to_str().unwrap().to_owned()
        };
        assert_eq!(ask(Some("gzip, deflate")), "gzip, deflate");
        assert_eq!(ask(Some("br;q=1.0, gzip;q=0.8, zstd")), "gzip;q=0.8");
        assert_eq!(ask(Some("br, zstd")), "identity");
        assert_eq!(ask(Some("*")), "identity");
        assert_eq!(ask(None), "identity");
    }
}
