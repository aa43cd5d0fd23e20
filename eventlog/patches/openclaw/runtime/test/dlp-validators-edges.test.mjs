// Edges of the JS validators that the known-answer file does not reach (issue 15: the mutants that survived it).
// Card brands and lengths: the public IIN table (ISO/IEC 7812 issuer ranges as listed by the networks: Visa 4;
// Mastercard 51-55, 2221-2720; Mir 2200-2204; Amex 34, 37; Discover 6011, 644-649, 65; JCB 3528-3589; UnionPay 62;
// Diners 300-305, 36, 38; Maestro 50, 56-58, 63, 67), each number made Luhn-valid by this test's own check digit.
// Check digits of ИНН/СНИЛС/ОГРН/IBAN are computed here from the official algorithms (the same arithmetic as
// tests/vectors/dlp/validators_known_answers.json), choosing the rare branches: a remainder of 10, a sum of 100.
// The placeholder/template/credential rules are this project's own (README "DLP"); the cases name the rule they pin.
import { test } from "node:test";
import assert from "node:assert/strict";
import { VALIDATORS, entropy } from "../dlp-validators.mjs";

const V = VALIDATORS;

// ISO/IEC 7812-1 Annex B (Luhn): the digit that makes the whole number pass
function luhnDigit(payload) {
  let sum = 0;
  for (let i = 0; i < payload.length; i++) {
    let d = Number(payload[payload.length - 1 - i]);
    if (i % 2 === 0) { d *= 2; if (d > 9) d -= 9; }
    sum += d;
  }
  return String((10 - (sum % 10)) % 10);
}
const cardOf = (prefix, len) => {
  const body = prefix + "7".repeat(len - prefix.length - 1);
  return body + luhnDigit(body);
};

test("card: each brand's prefix range and lengths, both ends", () => {
  const yes = [["4", 13], ["4", 16], ["4", 19], ["51", 16], ["55", 16], ["2221", 16], ["2720", 16],
    ["2200", 16], ["2204", 19], ["34", 15], ["37", 15], ["6011", 16], ["6011", 19], ["65", 16], ["65", 19],
    ["644", 16], ["649", 19], ["3528", 16], ["3589", 19], ["62", 16], ["62", 19], ["300", 14], ["305", 19],
    ["36", 14], ["38", 19], ["50", 13], ["56", 19], ["57", 16], ["58", 13], ["63", 16], ["67", 19]];
  const no = [["4", 14], ["4", 15], ["4", 17], ["51", 15], ["55", 17], ["2220", 16], ["2721", 16], ["2205", 16],
    ["2200", 15], ["34", 16], ["37", 14], ["6011", 15], ["643", 16], ["3527", 16], ["3590", 16], ["62", 15],
    ["306", 14], ["36", 13], ["59", 16], ["1", 16], ["50", 12], ["50", 20], ["4", 20], ["65", 15], ["644", 15],
    ["3528", 15], ["38", 13], ["67", 20]];
  for (const [p, n] of yes) assert.equal(V.card(cardOf(p, n)), true, `${p}… length ${n}`);
  for (const [p, n] of no) assert.equal(V.card(cardOf(p, n)), false, `${p}… length ${n}`);
  assert.equal(V.card("4111 1111 1111 1111"), true);
  assert.equal(V.card("4111-1111-1111-1112"), false);
});

test("IBAN: a correct MOD 97-10 check with a length the country does not use is refused", () => {
  const mod97 = (s) => [...s].reduce((r, ch) => (r * (ch <= "9" ? 10 : 100) + parseInt(ch, 36)) % 97, 0);
  const make = (cc, bban) => { const cd = String(98 - mod97(bban + cc + "00")).padStart(2, "0"); return cc + cd + bban; };
  const good = make("GB", "WEST12345698765432");
  assert.equal(good, "GB82WEST12345698765432"); // the registry's own example, rebuilt from its BBAN
  assert.equal(V.iban(good), true);
  assert.equal(V.iban(make("GB", "WEST1234569876543")), false); // 21 characters, check digits right
  assert.equal(V.iban(make("GB", "WEST123456987654321")), false); // 23
});

test("ИНН/ОГРН/СНИЛС: the branch where the remainder is 10 (check digit 0) and the СНИЛС sum of 100/101", () => {
  const wsum = (d, w) => w.reduce((s, x, i) => s + Number(d[i]) * x, 0);
  const INN10 = [2, 4, 10, 3, 5, 9, 4, 6, 8];
  let p10 = null;
  for (let i = 100000000; p10 === null; i++) if (wsum(String(i), INN10) % 11 === 10) p10 = String(i);
  assert.equal(V.inn10(p10 + "0"), true, p10 + "0");
  assert.equal(V.inn10(p10 + "1"), false);
  const A = [7, 2, 4, 10, 3, 5, 9, 4, 6, 8], B = [3, 7, 2, 4, 10, 3, 5, 9, 4, 6, 8];
  let inn12 = null;
  for (let i = 5000000000; inn12 === null; i++) {
    const s = String(i);
    if (wsum(s, A) % 11 !== 10) continue;
    const s11 = s + "0";
    inn12 = s11 + String((wsum(s11, B) % 11) % 10);
  }
  assert.equal(V.inn12(inn12), true, inn12);
  let og = null;
  for (let i = 102770000000n; og === null; i++) if (i % 11n === 10n) og = `${i}0`;
  assert.equal(V.ogrn(og), true, og);
  assert.equal(V.ogrn(og.slice(0, 12) + "1"), false);
  let ogip = null;
  for (let i = 30450000000000n; ogip === null; i++) if (i % 13n >= 10n) ogip = `${i}${(i % 13n) % 10n}`;
  assert.equal(V.ogrnip(ogip), true, ogip);
  const S = [9, 8, 7, 6, 5, 4, 3, 2, 1];
  const snils = (cond) => { for (let i = 100000000; ; i++) if (cond(wsum(String(i), S))) return String(i); };
  const p100 = snils((s) => s % 101 === 100);
  assert.equal(V.snils(p100 + "00"), true, p100);
  assert.equal(V.snils(snils((s) => s === 101) + "00"), true);
  const small = snils((s) => s % 101 < 10);
  const check = wsum(small, S) % 101;
  assert.equal(V.snils(small + String(check)), false, "10 digits are not a СНИЛС even when the check matches");
  assert.equal(V.snils(small + "0" + String(check)), true);
});

test("password: two kinds of character (lower, upper, digit, other; Latin and Cyrillic, ё/Ё) at each range end", () => {
  for (const s of ["abcdef", "zzzabc", "ABCDEF", "ZZZABC", "аааббб", "яяяабв", "АААБББ", "ЯЯЯАБВ", "ёёёабв",
    "ЁЁЁАБВ", "000111", "999888", "!?!?!?-"]) assert.equal(V.password(s), false, s);
  for (const s of ["abc123", "ABCdef", "яблоко9", "ЯБЛОКОя", "ёлка12", "ЁЛКА12", "abc!!!", "ABC!!!", "123!!!", "АБВ!!!",
    "абв!!!", "ЁЁЁ!!!"])
    assert.equal(V.password(s), true, s);
  for (const s of ["password", "p@ssw0rd", "aaaaaaaa", "$Secret1", "<Secret1", "{Secret1", "%Secret1",
    "*Secret1", "[Secret1", "Secret1...", "Secret1…", "yourSecret1", "my_Secret1", "xxxSecret1", "Se****t1"])
    assert.equal(V.password(s), false, s);
});

test("not_placeholder / not_template / url_password: each placeholder and template shape", () => {
  for (const s of ["changeme", "aaaa", "$x1", "<x1", "{x1", "%x1", "*x1", "[x1", "ab1...", "ab1…", "your1", "my_1",
    "xxx1", "a****b"]) assert.equal(V.not_placeholder(s), false, s);
  for (const s of ["s3cr3tV4lue", "my1", "Yo", "ab.c"]) assert.equal(V.not_placeholder(s), true, s);
  for (const s of ["", "aaaa", "ab****cd", "abxxxxcd", "$HOME", "${SECRET}", "$(cat x)", "{{pw}}", "<pw>", "[pw]",
    "%(pw)s", "<%= pw %>", "process.env.PW", "getenv(PW)", "os.environ", "env(PW)", "config.pw", "'{{pw}}'",
    '"$TOKEN"']) assert.equal(V.not_template(s), false, JSON.stringify(s));
  for (const s of ["hunter2x", "$3cr3t!x", "a{b}c", "<abc", "[abc", "{abc", "%(abc", "<%abc", "'quoted pw'", '"xy"', "abc}", "abc%>", "abc]", "abc>", "abcs"])
    assert.equal(V.not_template(s), true, JSON.stringify(s));
  assert.equal(V.url_password("Passwd"), false);
  assert.equal(V.url_password("{{pw}}"), false);
  assert.equal(V.url_password("h7Kq2x"), true);
});

test("credential / token_value / userpass: lengths, variety, quotes, fakes, PEM", () => {
  const cred = { "abc123": true, "ab1cD": false, "yourSecret1": false, "xxxToken12": false, "$Secret12": false, "aab1aab1": false, "abcdefgh": false, '"abcdefgh"': true,
    '"abcdefg"': false, "'ABCDEFGHIJ'": true, '"1234567890"': true, "abc12345fake": false, "-----BEGIN KEY1": false,
    "!@#$%^&*": false, '"!@#$%^&*()"': false, "`abcdefgh`": true, "Abcdefg": true,
    "{{token}}": false, "changeme": false };
  for (const [s, want] of Object.entries(cred)) assert.equal(V.credential(s), want, s);
  const tok = { "abcd1234": true, "abc1234": false, "abcdefgh": false, '"abcd1234"': true, "{{abcd1234}}": false,
    "yourabcd1234": false, "abcd1234example": false, "ABCDefgh": true };
  for (const [s, want] of Object.entries(tok)) assert.equal(V.token_value(s), want, s);
  const up = { "alice:Tr0ub4dor": true, "alice": false, ":Tr0ub4dor": true, "alice:": true, "al:ab": false,
    "alice:{{pw}}": false, "{{user}}:Tr0ub4dor": false, "'alice':'Tr0ub4dor'": true, "alice:changeme": false,
    "alice:myfakepw1": false, "{{u}}:{{p}}": false, "ab:cd": false, "abcd:": true, "alice:ab": false,
    '"al":"ab"': false, "'al':'ab'": false };
  for (const [s, want] of Object.entries(up)) assert.equal(V.userpass(s), want, s);
});

test("jwt: the header must be a JSON object with alg", () => {
  const b64 = (o) => Buffer.from(JSON.stringify(o)).toString("base64url");
  assert.equal(V.jwt(`${b64({ alg: "HS256", typ: "JWT" })}.e30.sig`), true);
  assert.equal(V.jwt(`${b64({ typ: "JWT" })}.e30.sig`), false);
  assert.equal(V.jwt(`${b64([1])}.e30.sig`), false);
  assert.equal(V.jwt(`${b64(null)}.e30.sig`), false);
  assert.equal(V.jwt("abcde.e30.sig"), false); // 5 characters: length % 4 === 1 is never base64
  assert.equal(V.jwt("!!!!.e30.sig"), false);
});

test("entropy: bits per code point, the same on the ASCII fast path and the general path", () => {
  const close = (a, b, m) => assert.ok(Math.abs(a - b) < 1e-12, `${m}: ${a} != ${b}`);
  close(entropy("aabb"), 1, "aabb");
  close(entropy("abcd"), 2, "abcd");
  close(entropy("aaab"), -(0.75 * Math.log2(0.75) + 0.25 * Math.log2(0.25)), "aaab");
  close(entropy("аабб"), 1, "Cyrillic");
  close(entropy("😀😀ab"), 1.5, "astral");
  close(entropy("\x7f\x7fab"), 1.5, "DEL is ASCII");
  close(entropy("\x80\x80ab"), 1.5, "U+0080 is not");
  close(entropy("aabb"), 1, "the typed-array counts are reset after each call");
  close(entropy(""), 0, "empty");
});
