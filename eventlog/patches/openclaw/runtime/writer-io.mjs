// File-level building blocks of the JS writer: the chain-tail reader and plain fds (the lock and its lease are in
// writer-lock.mjs). Everything is async so the gateway's event loop never waits on the disk.
import * as fs from "node:fs";
import { promisify } from "node:util";
import { EventlogError } from "./writer-format.mjs";

export { LockTimeout, withFileLock } from "./writer-lock.mjs";

const TAIL_CHUNK = 64 * 1024;

/** The log on disk does not match its seal where a writer needs it to. */
export class DamagedLog extends EventlogError {
  constructor(message) { super(message, "EVENTLOG_DAMAGED"); this.name = "DamagedLog"; }
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
