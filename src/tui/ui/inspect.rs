//! The inspector panel: paints the lines `update` built for the selected storage.

use super::put;
use crate::tui::details::Tone;
use crate::tui::explorer::ExplorerState;
use crate::tui::shared::Shared;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;

pub fn draw(buf: &mut Buffer, r: Rect, sh: &Shared, ex: &ExplorerState) {
    let th = &sh.theme;
    let Some(ins) = &ex.inspect else { return };
    super::fill(buf, Rect::new(r.x, r.y, r.width, 1), th.live_header);
    put(
        buf,
        r.x,
        r.y,
        " inspect  (Esc close · a alloc · f free · j/k scroll · y copy)",
        r.width,
        th.live_header,
    );
    for (i, line) in ins.lines.iter().skip(ins.scroll).enumerate() {
        let y = r.y + 1 + i as u16;
        if y >= r.bottom() {
            break;
        }
        let mut x = r.x + 1;
        for (text, tone) in line {
            let st = match tone {
                Tone::Text => th.text,
                Tone::Dim => th.dim,
                Tone::Title => th.header_title,
                Tone::Warn => th.live_retained,
                Tone::Band(b) => th.band(*b),
                Tone::Frame { dim: false } => th.text,
                Tone::Frame { dim: true } => th.dim,
            };
            if x >= r.right() {
                break;
            }
            let room = r.right() - x;
            let shown = match tone {
                Tone::Frame { .. } => from_the_left(text, usize::from(room)),
                _ => std::borrow::Cow::Borrowed(text.as_str()),
            };
            x = put(buf, x, y, &shown, room, st);
        }
    }
}

/// A frame line made to fit `room` columns by shortening its file path from the left (its
/// indentation kept, its file name never cut), so its `file:line function` stays:
/// `  …/torch/nn/modules/module.py:1775:_call_impl`. What still does not fit (a long
/// annotation after the frame) is cut at the right when drawn.
fn from_the_left(text: &str, room: usize) -> std::borrow::Cow<'_, str> {
    let width = text.chars().count();
    if width <= room {
        return std::borrow::Cow::Borrowed(text);
    }
    let body = text.trim_start();
    let indent = &text[..text.len() - body.len()];
    // The path ends where `:<line>` starts; frames without one keep their text.
    let b = body.as_bytes();
    let Some(path_end) =
        (0..b.len().saturating_sub(1)).find(|&i| b[i] == b':' && b[i + 1].is_ascii_digit())
    else {
        return std::borrow::Cow::Borrowed(text);
    };
    let path = &body[..path_end];
    let name_start = path.rfind('/').map_or(0, |i| i + 1);
    let over = width - room;
    // Characters of the path that can go (all but its file name), one more for the `…`.
    let removable = path[..name_start].chars().count();
    if removable <= 1 {
        return std::borrow::Cow::Borrowed(text);
    }
    let cut = (over + 1).min(removable);
    let rest: String = body.chars().skip(cut).collect();
    std::borrow::Cow::Owned(format!("{indent}…{rest}"))
}

#[cfg(test)]
mod tests {
    use super::from_the_left;

    #[test]
    fn frames_keep_their_file_line_and_indentation() {
        let f = "  /usr/lib/python3.11/site-packages/torch/nn/modules/module.py:1775:_call_impl";
        assert_eq!(from_the_left(f, 200), f);
        let cut = from_the_left(f, 40);
        assert_eq!(cut.chars().count(), 40);
        assert_eq!(cut, "  …/nn/modules/module.py:1775:_call_impl");
        // Never into the file name: the rest is cut at the right when drawn.
        assert_eq!(from_the_left(f, 10), "  …module.py:1775:_call_impl");
        // An annotation after the frame is what goes when it is long.
        let fx = "  /tmp/torchinductor/xy/cxy.py:12:call [fx op=call_function node=addmm]";
        let cut = from_the_left(fx, 60);
        assert_eq!(cut.chars().count(), 60);
        assert_eq!(
            cut,
            "  …ductor/xy/cxy.py:12:call [fx op=call_function node=addmm]"
        );
        assert_eq!(
            from_the_left("  no line number here at all", 10),
            "  no line number here at all"
        );
    }
}
