//! Themes: semantic colour tokens read from TOML (`themes/*.toml`, built in via
//! `include_str!`, or a user file) and resolved into ratatui `Style`s in this one place.

use anyhow::{bail, Context, Result};
use memtide_core::trace::Band;
use ratatui::style::{Color, Modifier, Style};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::Path;

const DEFAULT: &str = include_str!("../../themes/default.toml");
const LIGHT: &str = include_str!("../../themes/light.toml");
const MONO: &str = include_str!("../../themes/mono.toml");
/// The most a theme file may hold (the built-in ones take about 2 KiB).
const THEME_MAX: u64 = 1 << 20;

/// Names of the built-in themes.
pub const BUILTIN: [&str; 3] = ["default", "light", "mono"];

#[derive(Debug, Deserialize)]
struct ThemeFile {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    mono: Option<bool>,
    #[serde(default)]
    tokens: BTreeMap<String, String>,
}

/// Resolved styles for every semantic token.
#[derive(Clone, Debug, PartialEq)]
pub struct Theme {
    pub name: String,
    /// The theme TOML it was read from (None: built in): an input no output may overwrite.
    pub file: Option<std::path::PathBuf>,
    /// No colours: bands are told apart by shade glyphs.
    pub mono: bool,
    pub bands: [Style; Band::COUNT],
    pub reserved: Style,
    /// The what-if overlay's simulated reserved line (`w`).
    pub whatif: Style,
    pub capacity: Style,
    pub peak_marker: Style,
    pub cursor: Style,
    pub cursor_bg: Style,
    pub mark: Style,
    pub oom: Style,
    pub axis: Style,
    pub lifetime: Style,
    pub matched: Style,
    pub minimap_fill: Style,
    pub minimap_viewport: Style,
    pub header_title: Style,
    pub header_text: Style,
    pub header_dim: Style,
    pub live_header: Style,
    pub live_selected: Style,
    pub live_retained: Style,
    pub live_match: Style,
    pub status_bar: Style,
    pub status_key: Style,
    pub status_error: Style,
    pub search_input: Style,
    pub help_border: Style,
    pub text: Style,
    pub dim: Style,
    pub error: Style,
}

impl Default for Theme {
    fn default() -> Self {
        // The built-in default always parses (a unit test checks it).
        Theme::from_toml(DEFAULT, None).unwrap_or_else(|_| Theme::blank("default"))
    }
}

impl Theme {
    fn blank(name: &str) -> Theme {
        let s = Style::default();
        Theme {
            name: name.to_string(),
            file: None,
            mono: false,
            bands: [s; Band::COUNT],
            reserved: s,
            whatif: s,
            capacity: s,
            peak_marker: s,
            cursor: s,
            cursor_bg: s,
            mark: s,
            oom: s,
            axis: s,
            lifetime: s,
            matched: s,
            minimap_fill: s,
            minimap_viewport: s,
            header_title: s,
            header_text: s,
            header_dim: s,
            live_header: s,
            live_selected: s,
            live_retained: s,
            live_match: s,
            status_bar: s,
            status_key: s,
            status_error: s,
            search_input: s,
            help_border: s,
            text: s,
            dim: s,
            error: s,
        }
    }

    /// A built-in theme by name.
    pub fn builtin(name: &str) -> Option<Theme> {
        let text = match name {
            "default" => DEFAULT,
            "light" => LIGHT,
            "mono" => MONO,
            _ => return None,
        };
        Theme::from_toml(text, None).ok()
    }

    /// Picks the theme from `--theme` (a built-in name or a path) and `NO_COLOR`.
    /// `NO_COLOR` (non-empty) selects mono unless a theme was asked for explicitly.
    pub fn resolve(arg: Option<&str>, no_color: bool) -> Result<Theme> {
        match arg {
            None if no_color => Ok(Theme::builtin("mono").unwrap_or_else(|| Theme::blank("mono"))),
            None => Ok(Theme::default()),
            Some(n) => {
                if let Some(t) = Theme::builtin(n) {
                    return Ok(t);
                }
                let p = Path::new(n);
                if !p.exists() {
                    bail!(
                        "unknown theme {n:?}: use one of {} or a path to a theme TOML",
                        BUILTIN.join(", ")
                    );
                }
                let text = memtide_core::formats::read_text_file(p, THEME_MAX, "a theme")
                    .with_context(|| format!("cannot read theme {}", p.display()))?;
                let mut t = Theme::from_toml(&text, Some(&Theme::default()))
                    .with_context(|| format!("bad theme {}", p.display()))?;
                t.file = Some(p.to_path_buf());
                Ok(t)
            }
        }
    }

    /// Parses a theme file; tokens it lacks come from `base` (or stay plain).
    pub fn from_toml(text: &str, base: Option<&Theme>) -> Result<Theme> {
        let f: ThemeFile = toml::from_str(text)?;
        let mut t = base.cloned().unwrap_or_else(|| Theme::blank("custom"));
        if let Some(n) = f.name {
            t.name = n;
        }
        if let Some(m) = f.mono {
            t.mono = m;
        }
        for (k, v) in &f.tokens {
            let style = parse_style(v).with_context(|| format!("token {k:?}"))?;
            let Some(slot) = t.slot(k) else {
                bail!("unknown theme token {k:?}");
            };
            *slot = style;
        }
        Ok(t)
    }

    fn slot(&mut self, key: &str) -> Option<&mut Style> {
        Some(match key {
            "band.persistent" => &mut self.bands[0],
            "band.activation" => &mut self.bands[1],
            "band.workspace" => &mut self.bands[2],
            "band.external" => &mut self.bands[3],
            "band.unknown" => &mut self.bands[4],
            "timeline.reserved" => &mut self.reserved,
            "timeline.whatif" => &mut self.whatif,
            "timeline.capacity" => &mut self.capacity,
            "timeline.peak_marker" => &mut self.peak_marker,
            "timeline.cursor" => &mut self.cursor,
            "timeline.cursor_bg" => &mut self.cursor_bg,
            "timeline.mark" => &mut self.mark,
            "timeline.oom" => &mut self.oom,
            "timeline.axis" => &mut self.axis,
            "timeline.lifetime" => &mut self.lifetime,
            "timeline.match" => &mut self.matched,
            "minimap.fill" => &mut self.minimap_fill,
            "minimap.viewport" => &mut self.minimap_viewport,
            "header.title" => &mut self.header_title,
            "header.text" => &mut self.header_text,
            "header.dim" => &mut self.header_dim,
            "live.header" => &mut self.live_header,
            "live.selected_bg" => &mut self.live_selected,
            "live.retained" => &mut self.live_retained,
            "live.match" => &mut self.live_match,
            "status.bar" => &mut self.status_bar,
            "status.key" => &mut self.status_key,
            "status.error" => &mut self.status_error,
            "search.input" => &mut self.search_input,
            "help.border" => &mut self.help_border,
            "text" => &mut self.text,
            "dim" => &mut self.dim,
            "error" => &mut self.error,
            _ => return None,
        })
    }

    pub fn band(&self, b: Band) -> Style {
        self.bands[b.idx()]
    }

    /// The style of a timeline fill: a band's, or the `k`th source of external memory's
    /// (the external band's colour first, then a fixed palette of its neighbours; in mono
    /// themes every source is the external band's style).
    pub fn fill(&self, f: Fill) -> Style {
        match f {
            Fill::Band(b) => self.band(b),
            Fill::Source(0) => self.band(Band::External),
            Fill::Source(_) if self.mono => self.band(Band::External),
            Fill::Source(k) => {
                let c = SOURCE_PALETTE[(k as usize - 1) % SOURCE_PALETTE.len()];
                self.band(Band::External).fg(c)
            }
        }
    }

    /// The theme's colours for a picture (`memtide plot`, the explorer's export), as CSS.
    pub fn palette(&self) -> memtide_report::picture::Palette {
        memtide_report::picture::Palette {
            bands: self.bands.map(|s| css(s.fg)),
            reserved: css(self.reserved.fg),
            capacity: css(self.capacity.fg),
            peak_marker: css(self.peak_marker.fg),
            mark: css(self.mark.fg),
            oom: css(self.oom.fg),
            sources: (0..=255u8)
                .map(|k| css(self.fill(Fill::Source(k)).fg))
                .collect(),
        }
    }

    /// A `*_bg` token is written as a colour; use it as a background (or as reverse in mono).
    pub fn as_bg(style: Style) -> Style {
        match style.fg {
            Some(c) if c != Color::Reset => Style::default().bg(c),
            _ => style,
        }
    }
}

/// A ratatui colour as CSS (named colours as the xterm palette shows them).
fn css(c: Option<Color>) -> Option<String> {
    let named = |i: u8| -> String {
        [
            "#000000", "#cd0000", "#00cd00", "#cdcd00", "#0000ee", "#cd00cd", "#00cdcd", "#e5e5e5",
            "#7f7f7f", "#ff0000", "#00ff00", "#ffff00", "#5c5cff", "#ff00ff", "#00ffff", "#ffffff",
        ][usize::from(i % 16)]
        .to_string()
    };
    match c {
        Some(Color::Rgb(r, g, b)) => Some(format!("#{r:02x}{g:02x}{b:02x}")),
        Some(Color::Indexed(i)) if i < 16 => Some(named(i)),
        Some(Color::Indexed(i)) if i >= 232 => {
            let v = 8 + 10 * (i - 232);
            Some(format!("#{v:02x}{v:02x}{v:02x}"))
        }
        Some(Color::Indexed(i)) => {
            let i = i - 16;
            let level = |x: u8| if x == 0 { 0 } else { 55 + 40 * x };
            Some(format!(
                "#{:02x}{:02x}{:02x}",
                level(i / 36),
                level((i / 6) % 6),
                level(i % 6)
            ))
        }
        Some(Color::Black) => Some(named(0)),
        Some(Color::Red) => Some(named(1)),
        Some(Color::Green) => Some(named(2)),
        Some(Color::Yellow) => Some(named(3)),
        Some(Color::Blue) => Some(named(4)),
        Some(Color::Magenta) => Some(named(5)),
        Some(Color::Cyan) => Some(named(6)),
        Some(Color::Gray) => Some(named(7)),
        Some(Color::DarkGray) => Some(named(8)),
        Some(Color::LightRed) => Some(named(9)),
        Some(Color::LightGreen) => Some(named(10)),
        Some(Color::LightYellow) => Some(named(11)),
        Some(Color::LightBlue) => Some(named(12)),
        Some(Color::LightMagenta) => Some(named(13)),
        Some(Color::LightCyan) => Some(named(14)),
        Some(Color::White) => Some(named(15)),
        Some(Color::Reset) | None => None,
    }
}

fn parse_style(v: &str) -> Result<Style> {
    let mut s = Style::default();
    for w in v.split_whitespace() {
        s = match w {
            "bold" => s.add_modifier(Modifier::BOLD),
            "dim" => s.add_modifier(Modifier::DIM),
            "italic" => s.add_modifier(Modifier::ITALIC),
            "underline" => s.add_modifier(Modifier::UNDERLINED),
            "reverse" => s.add_modifier(Modifier::REVERSED),
            "default" | "reset" => s,
            c => s.fg(c
                .parse::<Color>()
                .map_err(|_| anyhow::anyhow!("bad colour {c:?}"))?),
        };
    }
    Ok(s)
}

/// Glyph set for the timeline and bars.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Glyphs {
    /// Eighth blocks, colours tell bands apart.
    Blocks,
    /// Shade glyphs per band (no colours).
    Shades,
    /// Plain ASCII.
    Ascii,
}

/// What one segment of a timeline column is filled with: a band, or (the external band
/// split by source) the `k`th source in the split's stacking order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fill {
    Band(Band),
    Source(u8),
}

/// Colours of the external band's sources after the first (which keeps the band's colour):
/// purples and pinks, apart from the other bands' blue, orange, green and grey.
const SOURCE_PALETTE: [Color; 5] = [
    Color::Rgb(0xd7, 0x5f, 0xd7),
    Color::Rgb(0x87, 0x87, 0xff),
    Color::Rgb(0xff, 0x87, 0xd7),
    Color::Rgb(0x87, 0x5f, 0xaf),
    Color::Rgb(0xd7, 0xaf, 0xff),
];

impl Glyphs {
    pub fn pick(theme: &Theme, ascii: bool) -> Glyphs {
        if ascii {
            Glyphs::Ascii
        } else if theme.mono {
            Glyphs::Shades
        } else {
            Glyphs::Blocks
        }
    }

    /// The cell glyph of a band when a whole cell is drawn in one band.
    pub fn band_fill(self, b: Band) -> char {
        match self {
            Glyphs::Blocks => '█',
            Glyphs::Shades => ['▓', '▒', '░', '█', '·'][b.idx()],
            Glyphs::Ascii => ['#', '=', '+', '%', ':'][b.idx()],
        }
    }

    /// The cell glyph of a fill (sources of external memory: the external band's).
    pub fn fill_char(self, f: Fill) -> char {
        match f {
            Fill::Band(b) => self.band_fill(b),
            Fill::Source(_) => self.band_fill(Band::External),
        }
    }

    /// Lower-block glyph for `eighths` (1..=8) of a cell.
    pub fn eighth(self, eighths: u8) -> char {
        match self {
            Glyphs::Ascii => match eighths {
                0 => ' ',
                1..=3 => '.',
                4..=6 => ':',
                _ => '#',
            },
            _ => [' ', '▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'][eighths.min(8) as usize],
        }
    }

    pub fn peak(self) -> char {
        if self == Glyphs::Ascii {
            'v'
        } else {
            '▼'
        }
    }
    pub fn cursor_up(self) -> char {
        if self == Glyphs::Ascii {
            '^'
        } else {
            '▲'
        }
    }
    pub fn cursor_line(self) -> char {
        if self == Glyphs::Ascii {
            '|'
        } else {
            '┃'
        }
    }
    pub fn hline(self) -> char {
        if self == Glyphs::Ascii {
            '-'
        } else {
            '─'
        }
    }
    /// The what-if overlay's line.
    pub fn whatif_line(self) -> char {
        if self == Glyphs::Ascii {
            '*'
        } else {
            '┄'
        }
    }
    pub fn ceiling(self) -> char {
        if self == Glyphs::Ascii {
            '~'
        } else {
            '═'
        }
    }
    pub fn mark(self) -> char {
        if self == Glyphs::Ascii {
            '|'
        } else {
            '┴'
        }
    }
    pub fn mark_line(self) -> char {
        if self == Glyphs::Ascii {
            ':'
        } else {
            '│'
        }
    }
    pub fn oom(self) -> char {
        if self == Glyphs::Ascii {
            'X'
        } else {
            '✖'
        }
    }
    pub fn lifetime(self) -> char {
        if self == Glyphs::Ascii {
            '='
        } else {
            '━'
        }
    }
    pub fn matched(self) -> char {
        if self == Glyphs::Ascii {
            '*'
        } else {
            '•'
        }
    }
    pub fn selected(self) -> &'static str {
        if self == Glyphs::Ascii {
            ">"
        } else {
            "▸"
        }
    }
    pub fn sep(self) -> &'static str {
        if self == Glyphs::Ascii {
            "|"
        } else {
            "·"
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_light_theme_draws_pictures_in_the_report_layer_s_light_palette() {
        let light = Theme::builtin("light").expect("built in");
        assert_eq!(light.palette(), memtide_report::picture::Palette::light());
        // Another theme differs (the test compares something).
        let dark = Theme::builtin("default").expect("built in");
        assert_ne!(dark.palette(), memtide_report::picture::Palette::light());
    }

    #[test]
    fn builtins_parse_and_cover_every_token() {
        for n in BUILTIN {
            let t = Theme::builtin(n).expect(n);
            assert_eq!(t.name, n);
        }
        assert!(Theme::builtin("mono").unwrap().mono);
        assert!(!Theme::builtin("default").unwrap().mono);
        // Every token of default.toml is known (from_toml bails on unknown ones).
        let d = Theme::builtin("default").unwrap();
        assert_ne!(d.band(Band::Persistent), d.band(Band::Activation));
    }

    #[test]
    fn no_color_selects_mono_unless_a_theme_is_given() {
        assert!(Theme::resolve(None, true).unwrap().mono);
        assert!(!Theme::resolve(Some("light"), true).unwrap().mono);
        assert!(Theme::resolve(Some("nope-not-a-theme"), false).is_err());
    }

    #[test]
    fn user_theme_overrides_some_tokens() {
        let t = Theme::from_toml(
            "[tokens]\n\"band.persistent\" = \"red bold\"\n",
            Some(&Theme::default()),
        )
        .unwrap();
        assert_eq!(t.band(Band::Persistent).fg, Some(Color::Red));
        assert_eq!(
            t.band(Band::Activation),
            Theme::default().band(Band::Activation)
        );
        assert!(Theme::from_toml("[tokens]\n\"nope\" = \"red\"\n", None).is_err());
    }
}
