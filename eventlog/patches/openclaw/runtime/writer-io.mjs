// File-level building blocks of the JS writer: the cross-process lock of docs/log-format.md ("Locking";
// eventlog/lock.py is the other side — Node has no flock(2), so both languages share this O_EXCL protocol), and the
// chain-tail reader. Everything is async so the gateway's event loop never waits on the disk.
import * as fs from "node:fs";
import { constants as C } from "node:fs";
import { mkdir, open, readFile, rmdir, stat, unlink } from "node:fs/promises";
import { promisify } from "node:util";
import { EventlogError } from "./writer-format.mjs";

const STALE_EMPTY_MS = 2000;
const STALE_BREAKER_MS = 10000;
const LOCK_TIMEOUT_MS = 30000;
const TAIL_CHUNK = 64 * 1024;

export class LockTimeout extends EventlogError {
  constructor(message) { super(message, "EVENTLOG_LOCK_TIMEOUT"); this.name = "LockTimeout"; }
}

/** The log on disk does not match its seal where a writer needs it to. */
export class DamagedLog extends EventlogError {
  constructor(message) { super(message, "EVENTLOG_DAMAGED"); this.name = "DamagedLog"; }
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function pidAlive(pid) {
  try { process.kill(pid, 0); return true; } catch (e) { return e.code === "EPERM"; }
}

async function readSmall(path) {
  try { return await readFile(path, "latin1"); } catch (e) { if (e.code === "ENOENT") return null; throw e; }
}

async function isStale(path, content) {
  const text = content.trim();
  if (!text) {
    try { return Date.now() - (await stat(path)).mtimeMs > STALE_EMPTY_MS; } catch { return false; }
  }
  const pid = Number.parseInt(text.split(/\s/)[0], 10);
  if (!Number.isInteger(pid) || String(pid) !== text.split(/\s/)[0]) return true;
  return pid !== process.pid && !pidAlive(pid);
}

async function breakLock(path, content) {
  const breaker = path + ".break";
  try {
    await mkdir(breaker, 0o700);
  } catch (e) {
    if (e.code !== "EEXIST") throw e;
    try { if (Date.now() - (await stat(breaker)).mtimeMs > STALE_BREAKER_MS) await rmdir(breaker); } catch { /* gone */ }
    return;
  }
  try {
    if ((await readSmall(path)) === content) await unlink(path).catch(() => {});
  } finally {
    await rmdir(breaker).catch(() => {});
  }
}

export async function withFileLock(path, fn, timeoutMs = LOCK_TIMEOUT_MS) {
  const deadline = Date.now() + timeoutMs;
  let delay = 1;
  for (;;) {
    let fh = null;
    try {
      fh = await open(path, C.O_CREAT | C.O_EXCL | C.O_WRONLY, 0o600);
    } catch (e) {
      if (e.code !== "EEXIST") throw e;
    }
    if (fh) {
      try { await fh.write(`${process.pid}\n`); } finally { await fh.close(); }
      try { return await fn(); } finally { await unlink(path).catch(() => {}); }
    }
    const content = await readSmall(path);
    if (content === null) continue; // released between our open and read: retry at once
    if (await isStale(path, content)) await breakLock(path, content);
    if (Date.now() > deadline) {
      throw new LockTimeout(`could not lock ${path} within ${timeoutMs / 1000} s (held by ${JSON.stringify(content)})`);
    }
    await sleep(delay);
    delay = Math.min(delay * 2, 50);
  }
}

export async function writeAll(fh, buf) {
  let off = 0;
  while (off < buf.length) off += (await fh.write(buf, off, buf.length - off)).bytesWritten;
}

/** [last complete line (Buffer) or null, offset just after the last "\n"], reading backwards in chunks. */
export async function readLastLine(fh, size) {
  let buf = Buffer.alloc(0);
  let pos = size;
  let lastNl = -1;
  while (pos > 0 && lastNl < 0) {
    const n = Math.min(TAIL_CHUNK, pos);
    pos -= n;
    const chunk = Buffer.alloc(n);
    await fh.read(chunk, 0, n, pos);
    buf = Buffer.concat([chunk, buf]);
    const idx = buf.lastIndexOf(10);
    if (idx >= 0) lastNl = pos + idx;
  }
  if (lastNl < 0) return [null, 0];
  buf = buf.subarray(0, lastNl - pos);
  for (;;) {
    const idx = buf.lastIndexOf(10);
    if (idx >= 0) return [buf.subarray(idx + 1), lastNl + 1];
    if (pos === 0) return [buf, lastNl + 1];
    const n = Math.min(TAIL_CHUNK, pos);
    pos -= n;
    const chunk = Buffer.alloc(n);
    await fh.read(chunk, 0, n, pos);
    buf = Buffer.concat([chunk, buf]);
  }
}

const p = { open: promisify(fs.open), read: promisify(fs.read), write: promisify(fs.write), fstat: promisify(fs.fstat),
  fsync: promisify(fs.fsync), ftruncate: promisify(fs.ftruncate), close: promisify(fs.close) };

/** A file descriptor with FileHandle's async methods. Why not a FileHandle: the writer keeps log files open across
 * appends, and Node 26 turns a FileHandle collected while open into an uncaught error; a plain fd cannot do that. */
export class Fd {
  constructor(fd) { this.fd = fd; }
  read(buffer, offset, length, position) { return p.read(this.fd, buffer, offset, length, position); }
  write(buffer, offset, length) { return p.write(this.fd, buffer, offset, length, null); }
  stat() { return p.fstat(this.fd); }
  sync() { return p.fsync(this.fd); }
  truncate(len) { return p.ftruncate(this.fd, len); }
  async close() {
    const fd = this.fd;
    this.fd = -1;
    if (fd >= 0) await p.close(fd);
  }
}

export async function openFd(path, flags, mode = 0o600) {
  return new Fd(await p.open(path, flags, mode));
}
