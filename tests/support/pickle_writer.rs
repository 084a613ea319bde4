//! A protocol-4 pickle writer with just the opcodes the hostile-input tests need, and the
//! snapshot pickle they wrap entries in.
#![allow(dead_code)]

/// A protocol-4 pickle writer with just the opcodes these tests need.
pub struct P(pub Vec<u8>);

impl P {
    pub fn new() -> P {
        P(vec![0x80, 4])
    }
    pub fn op(&mut self, b: u8) -> &mut P {
        self.0.push(b);
        self
    }
    pub fn s(&mut self, t: &str) -> &mut P {
        if t.len() < 256 {
            self.0.push(0x8c);
            self.0.push(t.len() as u8);
        } else {
            self.0.push(b'X');
            self.0.extend_from_slice(&(t.len() as u32).to_le_bytes());
        }
        self.0.extend_from_slice(t.as_bytes());
        self
    }
    pub fn i(&mut self, v: i32) -> &mut P {
        self.0.push(b'J');
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    pub fn put(&mut self, idx: u32) -> &mut P {
        self.0.push(b'r');
        self.0.extend_from_slice(&idx.to_le_bytes());
        self
    }
    pub fn get(&mut self, idx: u32) -> &mut P {
        self.0.push(b'j');
        self.0.extend_from_slice(&idx.to_le_bytes());
        self
    }
}

/// A snapshot pickle `{segments: [], device_traces: [[entries]]}`; `entry(p, i)` writes the
/// key/value items of entry `i` (inside its dict's MARK).
pub fn snapshot(n: usize, mut entry: impl FnMut(&mut P, usize)) -> Vec<u8> {
    let mut p = P::new();
    p.op(b'}')
        .op(b'(')
        .s("segments")
        .op(b']')
        .s("device_traces");
    p.op(b']').op(b'(').op(b']').op(b'(');
    for i in 0..n {
        p.op(b'}').op(b'(');
        entry(&mut p, i);
        p.op(b'u');
    }
    p.op(b'e').op(b'e').op(b'u').op(b'.');
    p.0
}
