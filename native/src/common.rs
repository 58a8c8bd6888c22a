//! Helpers shared by both binaries: monotonic clock, signal handling,
//! a tiny JSON object writer for stats lines and atomic stats-file rewrite.

use std::io::{self, Write};

/// CLOCK_MONOTONIC in nanoseconds.
pub fn now_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: valid pointer to a timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Block SIGTERM and SIGINT in the calling thread (and threads spawned later).
/// Returns the set so callers can `sigtimedwait` on it or unblock it in `ppoll`.
pub fn block_term_signals() -> libc::sigset_t {
    // SAFETY: plain sigset manipulation on a local value.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGTERM);
        libc::sigaddset(&mut set, libc::SIGINT);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        set
    }
}

static TERM_FLAG: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

extern "C" fn on_term(_sig: libc::c_int) {
    TERM_FLAG.store(true, std::sync::atomic::Ordering::SeqCst);
}

/// Install a flag-setting handler for SIGTERM/SIGINT (no SA_RESTART, so a
/// blocking `ppoll` returns EINTR). Used together with `block_term_signals`
/// and `ppoll`'s signal mask for a race-free wakeup.
pub fn install_term_flag_handler() {
    // SAFETY: installing a handler that only touches an atomic.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_term as *const () as usize;
        libc::sigemptyset(&mut sa.sa_mask);
        sa.sa_flags = 0;
        libc::sigaction(libc::SIGTERM, &sa, std::ptr::null_mut());
        libc::sigaction(libc::SIGINT, &sa, std::ptr::null_mut());
    }
}

/// True once SIGTERM or SIGINT arrived (handler installed by `install_term_flag_handler`).
pub fn term_requested() -> bool {
    TERM_FLAG.load(std::sync::atomic::Ordering::SeqCst)
}

/// A JSON value small enough for our stats lines.
#[derive(Debug, Clone, PartialEq)]
pub enum JVal {
    U(u64),
    F(f64),
    S(String),
}

/// Render a flat JSON object, keys in the given order, on one line.
pub fn json_object(fields: &[(&str, JVal)]) -> String {
    let mut s = String::from("{");
    for (i, (k, v)) in fields.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        s.push_str(&json_string(k));
        s.push(':');
        match v {
            JVal::U(u) => s.push_str(&u.to_string()),
            JVal::F(f) if f.is_finite() => s.push_str(&format!("{:.3}", f)),
            JVal::F(_) => s.push_str("null"),
            JVal::S(t) => s.push_str(&json_string(t)),
        }
    }
    s.push('}');
    s
}

fn json_string(t: &str) -> String {
    let mut s = String::with_capacity(t.len() + 2);
    s.push('"');
    for c in t.chars() {
        match c {
            '"' => s.push_str("\\\""),
            '\\' => s.push_str("\\\\"),
            c if (c as u32) < 0x20 => s.push_str(&format!("\\u{:04x}", c as u32)),
            c => s.push(c),
        }
    }
    s.push('"');
    s
}

/// Print one line to stdout and flush (the Python side reads line by line).
pub fn emit_line(line: &str) {
    let out = io::stdout();
    let mut l = out.lock();
    let _ = writeln!(l, "{}", line);
    let _ = l.flush();
}

/// Replace `path` atomically with `line` + newline (write temp file, rename).
pub fn write_stats_file(path: &str, line: &str) -> io::Result<()> {
    let tmp = format!("{}.tmp{}", path, std::process::id());
    std::fs::write(&tmp, format!("{}\n", line))?;
    std::fs::rename(&tmp, path)
}

/// Minimal `--flag value` / `--flag=value` argument scanner.
pub struct Args {
    items: Vec<(String, Option<String>)>,
}

impl Args {
    /// Parse; `flags` lists options that take no value.
    pub fn parse(argv: impl Iterator<Item = String>, flags: &[&str]) -> Result<Args, String> {
        let mut items = Vec::new();
        let mut it = argv.peekable();
        while let Some(a) = it.next() {
            if !a.starts_with("--") {
                return Err(format!("unexpected argument {:?}", a));
            }
            if let Some((k, v)) = a.split_once('=') {
                items.push((k.to_string(), Some(v.to_string())));
            } else if flags.contains(&a.as_str()) {
                items.push((a, None));
            } else {
                let v = it.next().ok_or_else(|| format!("{} needs a value", a))?;
                items.push((a, Some(v)));
            }
        }
        Ok(Args { items })
    }
    /// Last value given for `name`.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.items.iter().rev().find(|(k, _)| k == name).and_then(|(_, v)| v.as_deref())
    }
    /// All values given for a repeatable option.
    pub fn all(&self, name: &str) -> Vec<&str> {
        self.items.iter().filter(|(k, _)| k == name).filter_map(|(_, v)| v.as_deref()).collect()
    }
    pub fn has(&self, name: &str) -> bool {
        self.items.iter().any(|(k, _)| k == name)
    }
    /// Parse a value with FromStr, with a default when absent.
    pub fn num<T: std::str::FromStr>(&self, name: &str, default: T) -> Result<T, String> {
        match self.get(name) {
            None => Ok(default),
            Some(v) => v.parse().map_err(|_| format!("bad value for {}: {:?}", name, v)),
        }
    }
    /// Reject options not in `known`.
    pub fn check_known(&self, known: &[&str]) -> Result<(), String> {
        for (k, _) in &self.items {
            if !known.contains(&k.as_str()) {
                return Err(format!("unknown option {}", k));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_object_renders_flat_line() {
        let s = json_object(&[
            ("event", JVal::S("end".into())),
            ("packets", JVal::U(12)),
            ("delayed_mean_us", JVal::F(20012.3456)),
            ("nan", JVal::F(f64::NAN)),
        ]);
        assert_eq!(s, r#"{"event":"end","packets":12,"delayed_mean_us":20012.346,"nan":null}"#);
    }

    #[test]
    fn json_string_escapes() {
        assert_eq!(json_string("a\"b\\c\n"), r#""a\"b\\c\u000a""#);
    }

    #[test]
    fn args_parse_forms() {
        let a = Args::parse(
            ["--queue", "3", "--loss=0.1", "--route", "a", "--route", "b", "--gso"]
                .iter()
                .map(|s| s.to_string()),
            &["--gso"],
        )
        .unwrap();
        assert_eq!(a.num::<u16>("--queue", 0).unwrap(), 3);
        assert_eq!(a.num::<f64>("--loss", 0.0).unwrap(), 0.1);
        assert_eq!(a.all("--route"), vec!["a", "b"]);
        assert!(a.has("--gso"));
        assert!(a.check_known(&["--queue"]).is_err());
    }
}
