//! The cache lab: the bounded-residency teaching toy from the course material (issue 8).
//!
//! A fully associative LRU cache of `capacity` entries; request `i` asks for address
//! `(i × stride) mod 16`. It tracks toy entries — not bytes, aliases, lifetimes or an
//! allocator — and is deliberately unlike GPU memory. No terminal code.

/// Addresses cycle modulo this.
pub const ADDRESSES: u64 = 16;
/// The simulation stops after this many requests.
pub const MAX_REQUESTS: u64 = 4096;
/// Playback issues this many requests per second.
pub const PLAY_RATE_PER_SEC: u64 = 2;

/// One request and what happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Request {
    pub i: u64,
    pub addr: u8,
    pub hit: bool,
    /// The least recently used entry evicted by a miss into a full cache.
    pub evicted: Option<u8>,
}

/// The lab's state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lab {
    capacity: usize,
    stride: u64,
    next: u64,
    /// Resident entries, most recently used first.
    slots: Vec<u8>,
    history: Vec<Request>,
    hits: u64,
    misses: u64,
}

impl Lab {
    /// A cache of `capacity` entries (at least 1) probed with `stride`.
    pub fn new(capacity: usize, stride: u64) -> Lab {
        Lab {
            capacity: capacity.max(1),
            stride,
            next: 0,
            slots: Vec::new(),
            history: Vec::new(),
            hits: 0,
            misses: 0,
        }
    }

    pub fn capacity(&self) -> usize {
        self.capacity
    }
    pub fn stride(&self) -> u64 {
        self.stride
    }
    /// Requests issued so far (the next request's `i`).
    pub fn issued(&self) -> u64 {
        self.next
    }
    pub fn hits(&self) -> u64 {
        self.hits
    }
    pub fn misses(&self) -> u64 {
        self.misses
    }
    /// Resident entries, most recently used first.
    pub fn slots(&self) -> &[u8] {
        &self.slots
    }
    pub fn history(&self) -> &[Request] {
        &self.history
    }
    pub fn finished(&self) -> bool {
        self.next >= MAX_REQUESTS
    }

    /// Hit rate so far, None before the first request.
    pub fn hit_rate(&self) -> Option<f64> {
        let n = self.hits + self.misses;
        (n > 0).then(|| self.hits as f64 / n as f64)
    }

    /// Empties the cache and restarts at request 0.
    pub fn reset(&mut self) {
        *self = Lab::new(self.capacity, self.stride);
    }

    /// Changes the capacity (1..=16) and resets, so totals always describe one setting.
    pub fn set_capacity(&mut self, c: usize) {
        self.capacity = c.clamp(1, ADDRESSES as usize);
        self.reset();
    }

    /// Changes the stride (0..=16) and resets.
    pub fn set_stride(&mut self, s: u64) {
        self.stride = s.min(ADDRESSES);
        self.reset();
    }

    /// Issues the next request; None once the 4,096-request cap is reached.
    pub fn step(&mut self) -> Option<Request> {
        if self.finished() {
            return None;
        }
        let i = self.next;
        let addr = ((i.wrapping_mul(self.stride)) % ADDRESSES) as u8;
        let r = if let Some(pos) = self.slots.iter().position(|&a| a == addr) {
            // Hit: refresh recency.
            self.slots.remove(pos);
            self.slots.insert(0, addr);
            self.hits += 1;
            Request {
                i,
                addr,
                hit: true,
                evicted: None,
            }
        } else {
            let evicted = if self.slots.len() >= self.capacity {
                self.slots.pop()
            } else {
                None
            };
            self.slots.insert(0, addr);
            self.misses += 1;
            Request {
                i,
                addr,
                hit: false,
                evicted,
            }
        };
        self.next += 1;
        self.history.push(r);
        Some(r)
    }

    /// The prediction for the current setting (the misses of the first 16 requests).
    pub fn prediction(&self) -> Prediction {
        predict(self.capacity, self.stride)
    }
}

/// Greatest common divisor.
fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// The reasoning behind a prediction, shown to the user before any step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Prediction {
    /// Distinct addresses the stride visits before repeating: 16 / gcd(stride, 16).
    pub cycle: u64,
    pub capacity: usize,
    pub misses_first16: u64,
}

/// Predicts the misses among the first 16 requests from the cycle length alone (no
/// simulation): the addresses repeat every `cycle = 16 / gcd(s, 16)` requests. If the cycle fits
/// (`cycle ≤ C`), only its first pass misses; otherwise LRU always evicts exactly the entry
/// that comes back next, so every request misses.
pub fn predict(capacity: usize, stride: u64) -> Prediction {
    let cycle = ADDRESSES / gcd(stride % ADDRESSES, ADDRESSES);
    let misses = if cycle as usize <= capacity {
        cycle.min(16)
    } else {
        16
    };
    Prediction {
        cycle,
        capacity,
        misses_first16: misses,
    }
}

/// Shorthand for [`predict`]'s miss count (the tests' oracle).
#[cfg(test)]
fn predict_first16_misses(capacity: usize, stride: u64) -> u64 {
    predict(capacity, stride).misses_first16
}

/// Play/pause driven by an injected clock (milliseconds), so tests never sleep.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Player {
    playing: bool,
    /// Clock reading when play started and requests issued since.
    since_ms: u64,
    issued: u64,
}

impl Player {
    pub fn playing(&self) -> bool {
        self.playing
    }

    pub fn play(&mut self, now_ms: u64) {
        self.playing = true;
        self.since_ms = now_ms;
        self.issued = 0;
    }

    pub fn pause(&mut self) {
        self.playing = false;
    }

    pub fn toggle(&mut self, now_ms: u64) {
        if self.playing {
            self.pause()
        } else {
            self.play(now_ms)
        }
    }

    /// Issues the requests due by `now_ms` (2 per second of playback) and returns how many;
    /// stops playing at the cap.
    pub fn tick(&mut self, lab: &mut Lab, now_ms: u64) -> u64 {
        if !self.playing {
            return 0;
        }
        let due = now_ms.saturating_sub(self.since_ms) * PLAY_RATE_PER_SEC / 1000;
        let mut n = 0;
        while self.issued < due {
            if lab.step().is_none() {
                self.playing = false;
                break;
            }
            self.issued += 1;
            n += 1;
        }
        if lab.finished() {
            self.playing = false;
        }
        n
    }

    /// Milliseconds until the next request is due (for the runtime's timer), None when paused.
    pub fn next_due_in(&self, now_ms: u64) -> Option<u64> {
        if !self.playing {
            return None;
        }
        let next_at = self.since_ms + (self.issued + 1) * 1000 / PLAY_RATE_PER_SEC;
        Some(next_at.saturating_sub(now_ms))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn first16_misses(c: usize, s: u64) -> u64 {
        let mut lab = Lab::new(c, s);
        for _ in 0..16 {
            lab.step();
        }
        lab.misses()
    }

    #[test]
    fn worked_checks_from_the_course() {
        // C = 4, s = 4: the first 16 requests give 4 misses and 12 hits.
        let mut lab = Lab::new(4, 4);
        for _ in 0..16 {
            lab.step();
        }
        assert_eq!((lab.misses(), lab.hits()), (4, 12));
        // C = 2, s = 4: 16 misses in the first 16.
        assert_eq!(first16_misses(2, 4), 16);
    }

    #[test]
    fn prediction_equals_simulation_everywhere() {
        for c in 1..=16 {
            for s in 0..=16 {
                assert_eq!(
                    predict_first16_misses(c, s),
                    first16_misses(c, s),
                    "C={c} s={s}"
                );
            }
        }
    }

    #[test]
    fn lru_evicts_the_least_recently_used() {
        let mut lab = Lab::new(2, 1); // 0, 1, 2, ...
        lab.step(); // 0
        lab.step(); // 1
        let r = lab.step().expect("request"); // 2 evicts 0
        assert_eq!(r.evicted, Some(0));
        assert_eq!(lab.slots(), &[2, 1]);
    }

    #[test]
    fn stops_at_4096_requests() {
        let mut lab = Lab::new(3, 5);
        let mut n = 0;
        while lab.step().is_some() {
            n += 1;
        }
        assert_eq!(n, MAX_REQUESTS);
        assert!(lab.finished());
        assert_eq!(lab.hits() + lab.misses(), MAX_REQUESTS);
        lab.reset();
        assert_eq!(lab.issued(), 0);
        assert!(lab.slots().is_empty());
    }

    #[test]
    fn play_issues_two_requests_per_second_of_injected_time() {
        let mut lab = Lab::new(4, 4);
        let mut p = Player::default();
        assert_eq!(p.tick(&mut lab, 5_000), 0, "paused issues nothing");
        p.play(1_000);
        assert_eq!(p.tick(&mut lab, 1_400), 0);
        assert_eq!(p.tick(&mut lab, 1_500), 1);
        assert_eq!(p.tick(&mut lab, 4_000), 5); // 3 s of playback = 6 requests in all
        assert_eq!(lab.issued(), 6);
        assert_eq!(p.next_due_in(4_000), Some(500));
        p.pause();
        assert_eq!(p.tick(&mut lab, 100_000), 0);
        p.play(0);
        p.tick(&mut lab, 10_000_000);
        assert!(lab.finished() && !p.playing(), "play stops at the cap");
    }
}
