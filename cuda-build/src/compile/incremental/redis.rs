//! A minimal Redis client (RESP2 over `std::net::TcpStream`) for the kernel
//! cache's remote tier (`CUDA_BUILD_CACHE_REDIS`).
//!
//! Only what the cache needs: `AUTH`, `SELECT`, `GET`, `SET`. No Redis crate:
//! cuda-build compiles in every downstream build and stays light. Every
//! network step has a deadline (connect, read, write), so a dead or silent
//! server is an error within seconds, never a hang; any reply that is not
//! what RESP2 says is an error too (the caller then stops using Redis).

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::Mutex;
use std::time::Duration;

/// The largest value read back: a cache entry is capped below this, so a
/// longer reply is garbage (or someone else's key), never an allocation.
pub(crate) const MAX_VALUE: usize = 256 << 20;

/// Deadline for connecting and for each read or write.
const TIMEOUT: Duration = Duration::from_secs(2);

/// What the URL must look like, for messages.
pub(crate) const EXPECTED: &str =
    "redis://host:port[/db] (optionally redis://:password@host:port[/db])";

/// A parsed `redis://[[user]:password@]host[:port][/db]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Endpoint {
    pub host: String,
    pub port: u16,
    pub db: u32,
    pub user: Option<String>,
    pub password: Option<String>,
}

impl Endpoint {
    /// Parses the URL, or says what is wrong with it. The reason never
    /// quotes a part of the URL: in a malformed one, any part may be the
    /// password (`redis://user:pw` reads as host `user`, port `pw`).
    pub(crate) fn parse(url: &str) -> Result<Endpoint, String> {
        let rest = url
            .strip_prefix("redis://")
            .ok_or_else(|| "it does not start with `redis://`".to_string())?;
        let (auth, hostpart) = match rest.rsplit_once('@') {
            Some((a, h)) => (Some(a), h),
            None => (None, rest),
        };
        let (hostport, db) = match hostpart.split_once('/') {
            Some((hp, "")) => (hp, 0),
            Some((hp, db)) => (
                hp,
                db.parse::<u32>().map_err(|_| {
                    "what follows the first `/` is not a database number".to_string()
                })?,
            ),
            None => (hostpart, 0),
        };
        let (host, port) = match hostport.rsplit_once(':') {
            Some((h, p)) => (
                h,
                p.parse::<u16>()
                    .ok()
                    .filter(|p| *p != 0)
                    .ok_or_else(|| {
                        "what follows the last `:` is not a port number (a password needs `@host` after it)"
                            .to_string()
                    })?,
            ),
            None => (hostport, 6379),
        };
        let host = host.trim_start_matches('[').trim_end_matches(']');
        if host.is_empty() || host.contains(|c: char| c.is_whitespace() || c == '?') {
            return Err("it names no host".into());
        }
        let (user, password) = match auth {
            None => (None, None),
            Some(a) => match a.split_once(':') {
                Some((u, p)) => ((!u.is_empty()).then(|| u.to_string()), Some(p.to_string())),
                None => (None, Some(a.to_string())),
            },
        };
        Ok(Endpoint {
            host: host.to_string(),
            port,
            db,
            user,
            password,
        })
    }

    /// The address as shown in messages: never the password.
    pub(crate) fn shown(&self) -> String {
        let auth = match (&self.user, &self.password) {
            (Some(u), Some(_)) => format!("{u}:***@"),
            (None, Some(_)) => ":***@".into(),
            _ => String::new(),
        };
        format!("redis://{auth}{}:{}/{}", self.host, self.port, self.db)
    }
}

/// A client with a small pool of open connections (one per busy thread).
pub(crate) struct Client {
    ep: Endpoint,
    idle: Mutex<Vec<Conn>>,
}

impl Client {
    pub(crate) fn new(ep: Endpoint) -> Client {
        Client {
            ep,
            idle: Mutex::new(Vec::new()),
        }
    }

    pub(crate) fn endpoint(&self) -> &Endpoint {
        &self.ep
    }

    /// The value of `key`; None when absent.
    pub(crate) fn get(&self, key: &str) -> Result<Option<Vec<u8>>, String> {
        match self.call(&[b"GET", key.as_bytes()])? {
            Reply::Bulk(v) => Ok(v),
            other => Err(format!("GET answered {}", other.describe())),
        }
    }

    pub(crate) fn set(&self, key: &str, value: &[u8]) -> Result<(), String> {
        match self.call(&[b"SET", key.as_bytes(), value])? {
            Reply::Simple(s) if s == "OK" => Ok(()),
            other => Err(format!("SET answered {}", other.describe())),
        }
    }

    /// One command on a pooled (or new) connection; a connection that saw
    /// any error is dropped, never reused mid-reply.
    fn call(&self, args: &[&[u8]]) -> Result<Reply, String> {
        let pooled = self.idle.lock().ok().and_then(|mut v| v.pop());
        let mut conn = match pooled {
            Some(c) => c,
            None => Conn::open(&self.ep)?,
        };
        let reply = conn.call(args).map_err(|e| e.to_string())?;
        if let Reply::Error(e) = &reply {
            return Err(format!("Redis answered `{e}`"));
        }
        if let Ok(mut v) = self.idle.lock() {
            v.push(conn);
        }
        Ok(reply)
    }
}

#[derive(Debug)]
enum Reply {
    Simple(String),
    Error(String),
    Int(i64),
    Bulk(Option<Vec<u8>>),
}

impl Reply {
    fn describe(&self) -> String {
        match self {
            Reply::Simple(s) => format!("`+{s}`"),
            Reply::Error(e) => format!("`-{e}`"),
            Reply::Int(i) => format!("`:{i}`"),
            Reply::Bulk(_) => "a bulk string".into(),
        }
    }
}

struct Conn {
    stream: BufReader<TcpStream>,
}

impl Conn {
    /// Connects (each resolved address under the deadline), then AUTH and
    /// SELECT as the URL asks.
    fn open(ep: &Endpoint) -> Result<Conn, String> {
        let addrs = (ep.host.as_str(), ep.port)
            .to_socket_addrs()
            .map_err(|e| format!("cannot resolve `{}`: {e}", ep.host))?;
        let mut last = format!("`{}` resolves to no address", ep.host);
        for addr in addrs {
            match TcpStream::connect_timeout(&addr, TIMEOUT) {
                Ok(s) => {
                    let setup = s
                        .set_read_timeout(Some(TIMEOUT))
                        .and_then(|()| s.set_write_timeout(Some(TIMEOUT)))
                        .and_then(|()| s.set_nodelay(true));
                    setup.map_err(|e| format!("cannot set up the connection to {addr}: {e}"))?;
                    let mut c = Conn {
                        stream: BufReader::new(s),
                    };
                    c.hello(ep)?;
                    return Ok(c);
                }
                Err(e) => last = format!("cannot connect to {addr}: {e}"),
            }
        }
        Err(last)
    }

    fn hello(&mut self, ep: &Endpoint) -> Result<(), String> {
        let mut steps: Vec<(Vec<&[u8]>, &str)> = Vec::new();
        if let Some(p) = &ep.password {
            match &ep.user {
                Some(u) => steps.push((vec![b"AUTH", u.as_bytes(), p.as_bytes()], "AUTH")),
                None => steps.push((vec![b"AUTH", p.as_bytes()], "AUTH")),
            }
        }
        let db = ep.db.to_string();
        if ep.db != 0 {
            steps.push((vec![b"SELECT", db.as_bytes()], "SELECT"));
        }
        for (args, what) in steps {
            match self.call(&args).map_err(|e| format!("{what}: {e}"))? {
                Reply::Simple(s) if s == "OK" => {}
                other => return Err(format!("{what} answered {}", other.describe())),
            }
        }
        Ok(())
    }

    fn call(&mut self, args: &[&[u8]]) -> io::Result<Reply> {
        let mut req = Vec::with_capacity(32 + args.iter().map(|a| a.len() + 16).sum::<usize>());
        req.extend_from_slice(format!("*{}\r\n", args.len()).as_bytes());
        for a in args {
            req.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
            req.extend_from_slice(a);
            req.extend_from_slice(b"\r\n");
        }
        self.stream.get_mut().write_all(&req)?;
        read_reply(&mut self.stream)
    }
}

fn garbage(what: impl std::fmt::Display) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("not a Redis reply: {what}"),
    )
}

/// One RESP2 reply (no arrays: GET, SET, AUTH and SELECT never answer with
/// one); anything malformed is `InvalidData`.
fn read_reply(r: &mut impl BufRead) -> io::Result<Reply> {
    let line = read_line(r)?;
    // By byte: the first character of garbage may be multi-byte.
    let rest = line.get(1..).unwrap_or("");
    match line.as_bytes().first() {
        Some(b'+') => Ok(Reply::Simple(rest.to_string())),
        Some(b'-') => Ok(Reply::Error(rest.to_string())),
        Some(b':') => rest
            .parse()
            .map(Reply::Int)
            .map_err(|_| garbage(format!("`{line}`"))),
        Some(b'$') => {
            let n: i64 = rest.parse().map_err(|_| garbage(format!("`{line}`")))?;
            if n == -1 {
                return Ok(Reply::Bulk(None));
            }
            let n = usize::try_from(n)
                .ok()
                .filter(|n| *n <= MAX_VALUE + 4096)
                .ok_or_else(|| garbage(format!("a value of {n} bytes")))?;
            let mut buf = vec![0u8; n + 2];
            r.read_exact(&mut buf)?;
            if &buf[n..] != b"\r\n" {
                return Err(garbage("a value not followed by CRLF"));
            }
            buf.truncate(n);
            Ok(Reply::Bulk(Some(buf)))
        }
        // No command sent here answers with an array (and nesting is unbounded).
        Some(b'*') => Err(garbage("an array")),
        _ => Err(garbage(format!("`{}`", line.escape_debug()))),
    }
}

/// A CRLF-terminated line of at most 1 KiB (a header, never a value).
fn read_line(r: &mut impl BufRead) -> io::Result<String> {
    let mut line = Vec::new();
    let n = r.take(1024).read_until(b'\n', &mut line)?;
    if n == 0 {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "the server closed the connection",
        ));
    }
    if !line.ends_with(b"\r\n") {
        return Err(garbage(format!(
            "`{}`",
            String::from_utf8_lossy(&line).escape_debug()
        )));
    }
    line.truncate(line.len() - 2);
    String::from_utf8(line).map_err(|_| garbage("a reply line that is not UTF-8"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;
    use std::net::TcpListener;

    #[test]
    fn urls() {
        let ep = Endpoint::parse("redis://127.0.0.1:6380/2").unwrap();
        assert_eq!((ep.host.as_str(), ep.port, ep.db), ("127.0.0.1", 6380, 2));
        assert_eq!(ep.password, None);
        let ep = Endpoint::parse("redis://:s3cret@cache.local").unwrap();
        assert_eq!((ep.host.as_str(), ep.port, ep.db), ("cache.local", 6379, 0));
        assert_eq!(ep.password.as_deref(), Some("s3cret"));
        assert_eq!(ep.shown(), "redis://:***@cache.local:6379/0");
        let ep = Endpoint::parse("redis://ci:pw@h:1/").unwrap();
        assert_eq!(
            (ep.user.as_deref(), ep.password.as_deref()),
            (Some("ci"), Some("pw"))
        );
        for (bad, why) in [
            ("127.0.0.1:6379", "redis://"),
            ("redis://", "no host"),
            ("redis://h:port", "not a port"),
            ("redis://h:0", "not a port"),
            ("redis://h:6379/x", "not a database number"),
        ] {
            let e = Endpoint::parse(bad).unwrap_err();
            assert!(e.contains(why), "{bad}: {e}");
        }
    }

    #[test]
    fn replies() {
        let mut r = Cursor::new(b"$3\r\nabc\r\n$-1\r\n+OK\r\n-ERR no\r\n:5\r\n".to_vec());
        assert!(matches!(read_reply(&mut r).unwrap(), Reply::Bulk(Some(v)) if v == b"abc"));
        assert!(matches!(read_reply(&mut r).unwrap(), Reply::Bulk(None)));
        assert!(matches!(read_reply(&mut r).unwrap(), Reply::Simple(s) if s == "OK"));
        assert!(matches!(read_reply(&mut r).unwrap(), Reply::Error(e) if e == "ERR no"));
        assert!(matches!(read_reply(&mut r).unwrap(), Reply::Int(5)));
        for bad in [
            &b"HTTP/1.1 400 Bad Request\r\n"[..],
            b"$99999999999\r\n",
            b"$3\r\nabcd\r\n",
            b"+OK",
            b"",
            "\u{e9}t\u{e9}\r\n".as_bytes(),
            b"*1\r\n$1\r\na\r\n",
            b"\xff\xfe\r\n",
        ] {
            assert!(
                read_reply(&mut Cursor::new(bad.to_vec())).is_err(),
                "{bad:?}"
            );
        }
    }

    /// A server that accepts and never answers: the call ends with an error
    /// after the read deadline, it does not hang.
    #[test]
    fn a_silent_server_is_an_error_not_a_hang() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let c = Client::new(Endpoint::parse(&format!("redis://127.0.0.1:{port}")).unwrap());
        let t = std::time::Instant::now();
        assert!(c.get("k").is_err());
        assert!(t.elapsed() < Duration::from_secs(10));
        drop(l);
    }

    /// Nothing listens: an error naming the address.
    #[test]
    fn refused() {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let c = Client::new(Endpoint::parse(&format!("redis://127.0.0.1:{port}")).unwrap());
        let e = c.get("k").unwrap_err();
        assert!(e.contains(&format!("127.0.0.1:{port}")), "{e}");
    }
}
