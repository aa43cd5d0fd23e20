// Preloaded into the gateway under test (NODE_OPTIONS=--require; CommonJS because --require, unlike --import, also
// runs in every worker thread — OpenClaw does work in workers): denies and records every network attempt that is not
// loopback, so "nothing but 127.0.0.1 is contacted" is checked, not hoped. Why a preload and not a proxy: Node's fetch,
// http, tls, net and UDP all end in net.Socket#connect, dgram.Socket#send or the dns module, which this patches once
// for the whole process. Each denied attempt is one JSON line in $EVENTLOG_E2E_NET_LOG; the harness fails the test on
// any. Loopback and Unix sockets pass untouched; nothing here changes what the gateway does on 127.0.0.1.
"use strict";
const dgram = require("node:dgram");
const dns = require("node:dns");
const fs = require("node:fs");
const net = require("node:net");

const logPath = process.env.EVENTLOG_E2E_NET_LOG;

function isLoopback(host) {
  if (host === undefined || host === null || host === "") return true; // Node's default host is localhost
  const h = String(host).toLowerCase().replace(/^\[|\]$/g, "");
  return h === "localhost" || h === "::1" || /^127\.\d+\.\d+\.\d+$/.test(h) || /^::ffff:127\./.test(h);
}

function record(kind, target) {
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 40; // deep enough to name the feature that wanted the network
  const stack = (new Error().stack || "").split("\n").slice(2).map((s) => s.trim());
  Error.stackTraceLimit = limit;
  const line = JSON.stringify({ ts: new Date().toISOString(), pid: process.pid, kind, target, stack });
  if (logPath) {
    try { fs.appendFileSync(logPath, line + "\n"); } catch { /* the guard must never crash the gateway */ }
  }
  process.stderr.write(`[loopback-guard] denied ${kind} ${target}\n`);
}

function denied(target) {
  const err = new Error(`loopback guard: ${target} is not loopback (tests may only reach 127.0.0.1)`);
  err.code = "ECONNREFUSED";
  return err;
}

const origConnect = net.Socket.prototype.connect;
net.Socket.prototype.connect = function guardedConnect(...args) {
  // net.connect() passes its normalised [options, cb] array; user code may pass (options), (port, host) or (path).
  let opts = args[0];
  if (Array.isArray(opts)) opts = opts[0];
  if (typeof opts === "number" || (typeof opts === "string" && /^\d+$/.test(opts))) {
    opts = { port: opts, host: typeof args[1] === "string" ? args[1] : undefined };
  } else if (typeof opts === "string") {
    opts = { path: opts };
  }
  if (opts && typeof opts === "object" && !opts.path && !isLoopback(opts.host)) {
    const target = `tcp ${opts.host}:${opts.port}`;
    record("connect", target);
    process.nextTick(() => this.destroy(denied(target)));
    return this;
  }
  return origConnect.apply(this, args);
};

const origSend = dgram.Socket.prototype.send;
dgram.Socket.prototype.send = function guardedSend(...args) {
  // send(msg[, offset, length], port[, address][, cb]): the address is the first string after the port.
  const addr = args.find((a, i) => i > 0 && typeof a === "string");
  if (!isLoopback(addr)) {
    const target = `udp ${addr}`;
    record("udp", target);
    const cb = args.find((a) => typeof a === "function");
    if (cb) process.nextTick(() => cb(denied(target)));
    return;
  }
  return origSend.apply(this, args);
};

function guardLookup(obj, name, promise) {
  const orig = obj[name];
  if (typeof orig !== "function") return;
  obj[name] = function guardedLookup(host, ...rest) {
    if (!isLoopback(host)) {
      const target = `dns ${name} ${host}`;
      record("dns", target);
      const err = denied(target);
      err.code = "ENOTFOUND";
      if (promise) return Promise.reject(err);
      const cb = rest.find((a) => typeof a === "function");
      if (cb) process.nextTick(() => cb(err));
      return undefined;
    }
    return orig.call(this, host, ...rest);
  };
}

for (const name of ["lookup", "resolve", "resolve4", "resolve6", "resolveAny", "resolveCname", "resolveMx",
  "resolveTxt", "resolveSrv", "resolveNs"]) {
  guardLookup(dns, name, false);
  guardLookup(dns.promises, name, true);
}
