//! The raw command line: `validate --replay` as `replay`, arguments that
//! are not UTF-8, clap's errors cut to one line naming the flag, which
//! flags were given (rather than left at their defaults). What does not
//! live here: which flags a command ignores or overrides (they need the
//! command: the binary), library errors (the `usage` module).

use kicklab_model::Flag;

/// `kicklab validate --replay DIR ...` as `kicklab replay DIR ...`: a
/// replay runs nothing, so none of validate's own flags (its required
/// `--backend`) apply.
pub fn replay_alias(args: Vec<std::ffi::OsString>) -> Vec<std::ffi::OsString> {
    if args.get(1).is_none_or(|a| a != "validate") {
        return args;
    }
    let flag = Flag::Replay.to_string();
    let with_value = format!("{flag}=");
    let at = args.iter().position(|a| {
        a.to_str()
            .is_some_and(|a| a == flag || a.starts_with(&with_value))
    });
    let Some(at) = at else {
        return args;
    };
    let mut out: Vec<std::ffi::OsString> = vec![args[0].clone(), "replay".into()];
    for (i, a) in args.iter().enumerate().skip(2) {
        if i == at {
            if let Some(dir) = a.to_str().and_then(|a| a.strip_prefix(&with_value)) {
                out.push(dir.into());
            }
        } else {
            out.push(a.clone());
        }
    }
    out
}

/// clap's id of `flag` (its name with `_` for `-`).
fn arg_id(flag: Flag) -> String {
    flag.name().replace('-', "_")
}

/// Whether `flag` was given on the command line of the subcommand whose
/// matches are `sub` (not left at its default).
pub fn given(sub: &clap::ArgMatches, flag: Flag) -> bool {
    let id = arg_id(flag);
    sub.try_get_raw(&id).is_ok()
        && sub.value_source(&id) == Some(clap::parser::ValueSource::CommandLine)
}

/// The value `flag` was given on the command line, where it was.
pub fn given_value(sub: &clap::ArgMatches, flag: Flag) -> Option<String> {
    let raw = sub.try_get_raw(&arg_id(flag)).ok().flatten()?.next()?;
    given(sub, flag).then(|| raw.to_string_lossy().into_owned())
}

/// The first flag given on the command line of `sub` other than those in
/// `allowed`, as its name (`--messages`).
pub fn given_besides(sub: &clap::ArgMatches, allowed: &[Flag]) -> Option<String> {
    sub.ids()
        .map(clap::Id::as_str)
        .filter(|id| !allowed.iter().any(|&f| arg_id(f) == *id))
        .find(|id| sub.value_source(id) == Some(clap::parser::ValueSource::CommandLine))
        .map(|id| format!("--{}", id.replace('_', "-")))
}

/// A value parser over a fixed set of values, each given by its name:
/// clap lists them in `--help` and refuses any other with its own words.
pub fn choice<T: Copy + Send + Sync + 'static>(
    all: &'static [T],
    name: fn(T) -> &'static str,
) -> impl clap::builder::TypedValueParser<Value = T> {
    use clap::builder::TypedValueParser as _;
    clap::builder::PossibleValuesParser::new(all.iter().map(|&v| name(v))).map(move |s| {
        all.iter()
            .copied()
            .find(|&v| name(v) == s)
            .unwrap_or(all[0])
    })
}

/// Whether a latency bound on the command line (`--latency D` or
/// `latency=D` in a strategy) was written as a bare number, without its
/// unit.
pub fn latency_written_bare() -> bool {
    let args = args_text();
    let flag = Flag::Latency.to_string();
    let with_value = format!("{flag}=");
    let bare = |v: &str| v.trim().ends_with(|c: char| c.is_ascii_digit() || c == '.');
    args.iter().enumerate().any(|(i, a)| {
        if *a == flag {
            return args.get(i + 1).is_some_and(|v| bare(v));
        }
        if let Some(v) = a.strip_prefix(&with_value) {
            return bare(v);
        }
        a.split("latency=")
            .skip(1)
            .any(|v| bare(v.split(',').next().unwrap_or_default()))
    })
}

/// `line` on one line: control characters (a newline in a path, say)
/// shown escaped, so that an error stays the one line it claims to be.
pub fn one_line(line: &str) -> String {
    if !line.chars().any(char::is_control) {
        return line.to_string();
    }
    line.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// The command line's arguments as text, with any byte that is not UTF-8
/// replaced (for hints only: [`non_utf8_argument`] refuses such
/// arguments before anything reads them).
pub fn args_text() -> Vec<String> {
    std::env::args_os()
        .map(|a| a.to_string_lossy().into_owned())
        .collect()
}

/// The refusal of an argument that is not UTF-8 text, naming its flag
/// where there is one (`--wp: its value is not UTF-8 text: \xff`), or
/// the positional argument of `cmd`'s subcommand it stands for
/// (`replay <DIR>: ...`); `None` where every argument is text.
pub fn non_utf8_argument(cmd: &clap::Command) -> Option<String> {
    use std::os::unix::ffi::OsStrExt as _;
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    let shown = |a: &std::ffi::OsStr| {
        let mut text = String::new();
        for chunk in a.as_bytes().utf8_chunks() {
            text.push_str(chunk.valid());
            for b in chunk.invalid() {
                text.push_str(&format!("\\x{b:02x}"));
            }
        }
        kicklab_model::shown(&text)
    };
    let i = args.iter().position(|a| a.to_str().is_none())?;
    let arg = &args[i];
    let bytes = arg.as_bytes();
    if bytes.starts_with(b"--") {
        if let Some(eq) = bytes.iter().position(|&b| b == b'=') {
            if let Ok(flag) = std::str::from_utf8(&bytes[..eq]) {
                return Some(format!(
                    "{flag}: its value is not UTF-8 text: {}",
                    shown(arg)
                ));
            }
        }
    }
    if bytes.starts_with(b"-") {
        return Some(format!(
            "{}: no such flag (it is not UTF-8 text; kicklab's flags are ASCII)",
            shown(arg)
        ));
    }
    let sub = args
        .first()
        .and_then(|a| a.to_str())
        .and_then(|name| cmd.find_subcommand(name));
    // Whether the flag before it takes a value (unknown: as if it did).
    let takes_value = |flag: &str| {
        sub.and_then(|sub| {
            sub.get_arguments()
                .find(|a| a.get_long() == flag.strip_prefix("--"))
        })
        .is_none_or(|a| a.get_action().takes_values())
    };
    match i.checked_sub(1).and_then(|p| args[p].to_str()) {
        Some(flag) if flag.starts_with('-') && !flag.contains('=') && takes_value(flag) => Some(
            format!("{flag}: its value is not UTF-8 text: {}", shown(arg)),
        ),
        _ => match sub.and_then(|sub| sub.get_positionals().next().map(|p| (sub, p))) {
            Some((sub, p)) if i > 0 => Some(format!(
                "{} <{}>: its value is not UTF-8 text: {}",
                sub.get_name(),
                p.get_value_names()
                    .and_then(|v| v.first())
                    .map_or_else(|| p.get_id().as_str().to_uppercase(), ToString::to_string),
                shown(arg)
            )),
            _ => Some(format!(
                "{}: an argument that is not UTF-8 text (kicklab reads its arguments as UTF-8)",
                shown(arg)
            )),
        },
    }
}

/// clap's error as one line: its first line names the flag and the
/// problem; for a missing argument the flags follow on the next lines
/// (with the values `--backend` takes); clap's tip (a similar flag or
/// subcommand) and the possible values, where it gives them, are kept in
/// parentheses.
pub fn one_line_error(e: &clap::Error) -> String {
    // A value with a control character in it (a newline would cut the
    // message short, before it names the flag; clap's rendering drops the
    // others): the line is made here, the value shown escaped.
    if let Some(value) = e
        .get(clap::error::ContextKind::InvalidValue)
        .map(ToString::to_string)
        .filter(|v| v.chars().any(char::is_control))
    {
        let arg = e
            .get(clap::error::ContextKind::InvalidArg)
            .map(ToString::to_string)
            .unwrap_or_default();
        let why = std::error::Error::source(e).map(ToString::to_string);
        return one_line(&match why {
            Some(why) => format!("error: invalid value '{value}' for '{arg}': {why}"),
            None => format!("error: invalid value '{value}' for '{arg}'"),
        });
    }
    if e.kind() == clap::error::ErrorKind::UnknownArgument {
        if let Some(arg) = e
            .get(clap::error::ContextKind::InvalidArg)
            .map(ToString::to_string)
            .filter(|v| v.chars().any(char::is_control))
        {
            return one_line(&format!("error: unexpected argument '{arg}' found"));
        }
    }
    let text = e.render().to_string();
    let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
    let mut out = shorten_echo(lines.next().unwrap_or("error: bad arguments"));
    let rest: Vec<&str> = lines.collect();
    if e.kind() == clap::error::ErrorKind::MissingRequiredArgument {
        let missing: Vec<String> = rest
            .iter()
            .take_while(|l| l.starts_with("--") || l.starts_with('<'))
            .map(|l| {
                if l.split_whitespace().next() == Some(&Flag::Backend.to_string()) {
                    format!("{l} (futex, eventfd, pipe or kvm)")
                } else {
                    (*l).to_string()
                }
            })
            .collect();
        out = format!("{out} {}", missing.join(", "));
    }
    // `--strategy-p` where only `--strategy` is (model, sweep, map): say
    // where the per-party flags are, where clap's nearest flag (`--start`)
    // would mislead.
    if e.kind() == clap::error::ErrorKind::UnknownArgument {
        let arg = e
            .get(clap::error::ContextKind::InvalidArg)
            .map(ToString::to_string)
            .unwrap_or_default();
        let flag = arg.split('=').next().unwrap_or_default();
        let side = flag
            .strip_prefix(&Flag::Strategy.to_string())
            .or_else(|| flag.strip_prefix(&Flag::Mode.to_string()));
        let args = args_text();
        let sub = args.iter().skip(1).find(|a| !a.starts_with('-'));
        let names_strategies = matches!(
            sub.map(String::as_str),
            Some("model" | "sim" | "sweep" | "map" | "run")
        );
        // `-wp 2us`: clap reads `-w`; the user meant a long flag.
        if let Some(word) = args
            .iter()
            .skip(1)
            .find(|a| {
                !flag.is_empty()
                    && a.starts_with('-')
                    && !a.starts_with("--")
                    && a.len() > 2
                    && a.starts_with(flag)
            })
            .filter(|a| a[1..].bytes().all(|b| b.is_ascii_alphabetic() || b == b'-'))
        {
            return format!("{out} (a long flag takes two dashes: -{word})");
        }
        if let (true, Some(side @ ("-p" | "-c"))) = (names_strategies, side) {
            let strategy = Flag::Strategy;
            return format!(
                "{out} ({strategy}{side} is sim's and run's; here {strategy} sets both parties)"
            );
        }
    }
    let hints: Vec<&str> = rest
        .iter()
        .filter_map(|l| {
            l.strip_prefix("tip: ")
                .or_else(|| l.strip_prefix('[').and_then(|v| v.strip_suffix(']')))
        })
        .filter(|h| !h.starts_with("to pass ") && !h.starts_with("to see "))
        .collect();
    if !hints.is_empty() {
        out = format!("{out} ({})", hints.join("; "));
    }
    out
}

/// clap's line with the value it repeats (`invalid value '...' for`)
/// cut as kicklab's own messages cut one ([`kicklab_model::shown`]): a
/// 5000-character value is not repeated whole.
pub fn shorten_echo(line: &str) -> String {
    const START: &str = "invalid value '";
    const END: &str = "' for '";
    let Some(a) = line.find(START).map(|i| i + START.len()) else {
        return line.to_string();
    };
    let Some(b) = line[a..].find(END).map(|i| a + i) else {
        return line.to_string();
    };
    format!(
        "{}{}{}",
        &line[..a],
        kicklab_model::shown(&line[a..b]),
        &line[b..]
    )
}
