// GitHub token checksum (issue 15): the github_crc32 validator against tokens whose checksum this test computes itself
// from the published format — GitHub, "Behind GitHub's new authentication token formats" (2021): a prefix such as
// ghp_, 30 random base62 characters, then a CRC32 of those 30 characters, base62-encoded and left-padded to 6. The CRC
// here is a bitwise CRC-32 (ISO-HDLC: reflected polynomial 0xEDB88320, init and final xor 0xFFFFFFFF), checked first
// against the catalogue check value CRC-32("123456789") = 0xCBF43926; nothing is taken from the engine.
// No rule uses the validator today (docs/testing.md), so it is tested directly.
import { test } from "node:test";
import assert from "node:assert/strict";
import { VALIDATORS } from "../dlp-validators.mjs";

const B62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

function crc32(s) {
  let c = 0xffffffff;
  for (const b of Buffer.from(s, "utf8")) {
    c ^= b;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0xedb88320 : c >>> 1;
  }
  return (c ^ 0xffffffff) >>> 0;
}

function base62(n, width) {
  let out = "";
  for (; n > 0; n = Math.floor(n / 62)) out = B62[n % 62] + out;
  return out.padStart(width, "0");
}

const token = (prefix, body) => prefix + body + base62(crc32(body), 6);

test("the test's own CRC-32 gives the catalogue check value", () => {
  assert.equal(crc32("123456789"), 0xcbf43926);
});

test("github_crc32 keeps a token whose last 6 characters are the base62 CRC32 of the 30 before them", () => {
  const bodies = ["aBcDeFgHiJkLmNoPqRsTuVwXyZ0123", "Z9y8X7w6V5u4T3s2R1q0PpOoNnMmLl", "000000000000000000000000000001"];
  for (const body of bodies) {
    for (const prefix of ["ghp_", "gho_", "ghs_"]) {
      const t = token(prefix, body);
      assert.equal(t.length, 40);
      assert.equal(VALIDATORS.github_crc32(t), true, t);
    }
  }
});

test("github_crc32 refuses a token with one body or checksum character changed", () => {
  const good = token("ghp_", "aBcDeFgHiJkLmNoPqRsTuVwXyZ0123");
  for (const i of [4, 20, 33, 36, 39]) {
    const c = good[i] === "A" ? "B" : "A";
    const bad = good.slice(0, i) + c + good.slice(i + 1);
    assert.equal(VALIDATORS.github_crc32(bad), false, bad);
  }
});

test("github_crc32: a checksum that needs the zero padding (CRC < 62^5) still matches", () => {
  // search bodies deterministically until one has a CRC below 62^5, so the encoded value has a leading "0"
  let body = null;
  for (let i = 0; body === null; i++) {
    const b = `padcase${String(i).padStart(23, "x")}`;
    if (crc32(b) < 62 ** 5) body = b;
  }
  const t = token("ghp_", body);
  assert.equal(t[34], "0");
  assert.equal(VALIDATORS.github_crc32(t), true, t);
  assert.equal(VALIDATORS.github_crc32(t.slice(0, 34) + t.slice(35) + "0"), false);
});
