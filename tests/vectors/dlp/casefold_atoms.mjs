// The JS half of tests/vectors/dlp/make_casefold.py: reads [{atom, flags}] as JSON on stdin, writes for each atom the
// sorted code points c (0..0x10FFFF, no surrogates) for which `new RegExp(atom, flags).test(c)` holds, compiled as
// runtime/dlp.mjs compiles it ("u" + "i" for a rule with the i flag; "u" alone for left/hold-back classes), plus the
// code points whose String#toLowerCase differs from the Python side's (given as {cp: lower} for every cp whose lower
// case is not itself). Exhaustive: every code point is tested against every atom.
import { readFileSync } from "node:fs";

const req = JSON.parse(readFileSync(0, "utf8"));
const cps = [];
for (let c = 0; c <= 0x10ffff; c++) if (c < 0xd800 || c > 0xdfff) cps.push(c);
const strs = cps.map((c) => String.fromCodePoint(c));
const atoms = req.atoms.map(({ atom, flags }) => {
  const rx = new RegExp(atom, flags);
  const hit = [];
  for (let k = 0; k < strs.length; k++) if (rx.test(strs[k])) hit.push(cps[k]);
  return hit;
});
const lower = {};
for (let k = 0; k < strs.length; k++) {
  const l = strs[k].toLowerCase();
  if (l !== strs[k]) lower[cps[k]] = l;
}
process.stdout.write(JSON.stringify({ node: process.versions.node, unicode: process.versions.unicode,
  icu: process.versions.icu, atoms, lower }));
