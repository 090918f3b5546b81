//! What the commands print for people and scripts to read.

use std::io::{ErrorKind, Write};

/// Writes `text` to stdout. A reader that stopped reading (`berth explain ... | head`) is not an
/// error: the rest is dropped, as a Unix tool does, instead of Rust's `print!` panicking on the
/// broken pipe.
pub fn print(text: &str) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() == ErrorKind::BrokenPipe => Ok(()),
        other => other,
    }
}
