//! Byte-level JSON scanning shared by the fast paths (`kineto/fast.rs`,
//! `snapshot/json_fast.rs`): whitespace, skipping a string, skipping a whole value. Each
//! returns None where the bytes end too soon, so the caller falls back to serde_json.

#[inline]
pub(crate) fn ws(s: &[u8], i: &mut usize) {
    while *i < s.len() && matches!(s[*i], b' ' | b'\n' | b'\r' | b'\t') {
        *i += 1;
    }
}

/// Skips any string, escapes included.
pub(crate) fn skip_str(s: &[u8], i: &mut usize) -> Option<()> {
    let mut j = *i + 1;
    loop {
        let k = memchr::memchr2(b'"', b'\\', s.get(j..)?)?;
        if s[j + k] == b'\\' {
            j += k + 2;
        } else {
            *i = j + k + 1;
            return Some(());
        }
    }
}

/// Skips one value of any type.
pub(crate) fn skip_value(s: &[u8], i: &mut usize) -> Option<()> {
    match *s.get(*i)? {
        b'"' => skip_str(s, i),
        b'{' | b'[' => {
            let mut depth = 0usize;
            loop {
                let c = *s.get(*i)?;
                match c {
                    b'"' => {
                        skip_str(s, i)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            *i += 1;
                            return Some(());
                        }
                    }
                    _ => {}
                }
                *i += 1;
            }
        }
        _ => {
            let start = *i;
            while *i < s.len()
                && !matches!(s[*i], b',' | b'}' | b']' | b' ' | b'\n' | b'\r' | b'\t')
            {
                *i += 1;
            }
            // A scalar running into the window's end may be cut off.
            (*i > start && *i < s.len()).then_some(())
        }
    }
}
