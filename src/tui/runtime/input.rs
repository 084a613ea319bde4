//! The input thread: the only reader of crossterm events; forwards keys, mouse and resizes
//! as `Msg`s until the app's channel closes or `stop` is set.

use crate::tui::msg::Msg;
use crossbeam_channel::Sender;
use ratatui::crossterm::event::{self, Event};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

pub fn spawn(tx: Sender<Msg>, stop: Arc<AtomicBool>) -> std::io::Result<JoinHandle<()>> {
    std::thread::Builder::new()
        .name("memtide-input".into())
        .spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                match event::poll(Duration::from_millis(50)) {
                    Ok(true) => {}
                    Ok(false) => continue,
                    Err(_) => break,
                }
                let msg = match event::read() {
                    Ok(Event::Key(k)) => Msg::Key(k),
                    Ok(Event::Mouse(m)) => Msg::Mouse(m),
                    Ok(Event::Resize(width, height)) => Msg::Resize { width, height },
                    Ok(_) => continue,
                    Err(_) => break,
                };
                if tx.send(msg).is_err() {
                    break;
                }
            }
        })
}
