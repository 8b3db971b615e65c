//! A Redis server on 127.0.0.1 (Debian's `redis-server`) started by a test
//! on a free port and stopped when dropped, plus a tiny client for what the
//! tests check or tamper with (binary-safe, unlike `redis-cli` arguments).

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A free TCP port on 127.0.0.1 (free when asked).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `name` on PATH.
pub fn which(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|p| {
        std::env::split_paths(&p)
            .map(|d| d.join(name))
            .find(|c| c.is_file())
    })
}

/// A running `redis-server`, killed and waited for on drop.
pub struct Redis {
    child: Child,
    port: u16,
}

impl Redis {
    /// Starts one with no persistence, its files in `dir`. None (skipped)
    /// without `redis-server`, unless the test command promised the tools.
    pub fn start(dir: &Path) -> Option<Redis> {
        let Some(exe) = which("redis-server") else {
            assert!(
                !crate::nvcc_promised(),
                "redis-server is missing: apt-get install redis-server (scripts/test.sh does)"
            );
            eprintln!("skipped: redis-server missing");
            return None;
        };
        let port = free_port();
        let child = Command::new(exe)
            .args([
                "--bind",
                "127.0.0.1",
                "--port",
                &port.to_string(),
                "--save",
                "",
                "--appendonly",
                "no",
            ])
            .arg("--dir")
            .arg(dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Owned at once: dropping it (the panic below) kills and waits.
        let redis = Redis { child, port };
        for _ in 0..100 {
            if TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return Some(redis);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        drop(redis);
        panic!("redis-server did not listen on 127.0.0.1:{port} within 5 s");
    }

    /// `redis://127.0.0.1:<port>`.
    pub fn endpoint(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// The server's process id (to kill it from a script mid-build).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Kills the server and waits for it.
    pub fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// One command; the reply as bulk strings (an array's elements, or
    /// the one value; empty for nil, `+OK` as `OK`). Panics on `-ERR`.
    pub fn command(&self, args: &[&[u8]]) -> Vec<Vec<u8>> {
        let mut s = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut req = format!("*{}\r\n", args.len()).into_bytes();
        for a in args {
            req.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
            req.extend_from_slice(a);
            req.extend_from_slice(b"\r\n");
        }
        s.write_all(&req).unwrap();
        let mut r = BufReader::new(s);
        let line = read_line(&mut r);
        match line.as_bytes()[0] {
            b'*' => {
                let n: usize = line[1..].parse().unwrap();
                (0..n).map(|_| read_bulk(&mut r).unwrap()).collect()
            }
            b'$' => read_bulk_after(&mut r, &line).into_iter().collect(),
            b'+' | b':' => vec![line.as_bytes()[1..].to_vec()],
            _ => panic!("Redis answered {line:?} to {args:?}"),
        }
    }

    /// Keys matching a glob pattern.
    pub fn keys(&self, pattern: &str) -> Vec<String> {
        let mut k: Vec<String> = self
            .command(&[b"KEYS", pattern.as_bytes()])
            .into_iter()
            .map(|k| String::from_utf8(k).unwrap())
            .collect();
        k.sort();
        k
    }

    pub fn get(&self, key: &str) -> Option<Vec<u8>> {
        self.command(&[b"GET", key.as_bytes()]).pop()
    }

    pub fn set(&self, key: &str, value: &[u8]) {
        assert_eq!(self.command(&[b"SET", key.as_bytes(), value]), [b"OK"]);
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        self.stop();
    }
}

fn read_line(r: &mut impl BufRead) -> String {
    let mut line = String::new();
    r.read_line(&mut line).unwrap();
    assert!(line.ends_with("\r\n"), "not a Redis reply: {line:?}");
    line.truncate(line.len() - 2);
    line
}

fn read_bulk(r: &mut impl BufRead) -> Option<Vec<u8>> {
    let line = read_line(r);
    read_bulk_after(r, &line)
}

fn read_bulk_after(r: &mut impl BufRead, line: &str) -> Option<Vec<u8>> {
    assert!(line.starts_with('$'), "not a bulk string: {line:?}");
    let n: i64 = line[1..].parse().unwrap();
    if n < 0 {
        return None;
    }
    let mut buf = vec![0u8; n as usize + 2];
    r.read_exact(&mut buf).unwrap();
    buf.truncate(n as usize);
    Some(buf)
}
