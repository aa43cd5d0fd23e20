// Telegram-HTML awareness for the DLP engine (twin of eventlog/dlp/htmltext.py).
// The visible text of a `parse_mode: HTML` payload (tags removed, entities decoded) and every attribute value, each
// with a map back to payload offsets. Offsets here are UTF-16 units; dlp.mjs converts to code points at its boundary.

const TAG_RE = /<(\/?)([A-Za-z][A-Za-z0-9-]*)((?:[^>"']|"[^"]*"|'[^']*')*)>/y;
const TAG_START_RE = /<\/?[A-Za-z]/y;
const ATTR_RE = /([A-Za-z_:][A-Za-z0-9_:.-]*)(?:[ \t\r\n]*=[ \t\r\n]*(?:"([^"]*)"|'([^']*)'|([^ \t\r\n"'>]+)))?/g;
const ENTITY_RE = /&(?:#([0-9]{1,7})|#[xX]([0-9A-Fa-f]{1,6})|([A-Za-z][A-Za-z0-9]{1,31}));/y;
const PARTIAL_ENTITY_RE = /&(?:#[xX]?[0-9A-Fa-f]{0,7}|[A-Za-z][A-Za-z0-9]{0,31})/y;
const NAMED = { amp: "&", lt: "<", gt: ">", quot: '"', apos: "'", nbsp: "\u00a0" };

function entity(m) {
  if (m[3] !== undefined) return Object.hasOwn(NAMED, m[3]) ? NAMED[m[3]] : null;
  const v = m[1] !== undefined ? parseInt(m[1], 10) : parseInt(m[2], 16);
  if (v === 0 || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff)) return null;
  return String.fromCodePoint(v);
}

function matchAt(re, s, i, end = s.length) {
  re.lastIndex = i;
  const m = re.exec(end === s.length ? s : s.slice(0, end));
  return m;
}

// Visible characters and their payload offsets in preallocated typed arrays (a visible string is never longer than
// its source range); plain runs are copied in bulk.
function newSeg(cap) {
  return { chars: [], starts: new Int32Array(cap + 2), ends: new Int32Array(cap + 2), n: 0 };
}

function push(seg, ch, s, e) {
  seg.chars.push(ch);
  for (let k = 0; k < ch.length; k++) { seg.starts[seg.n] = s; seg.ends[seg.n] = e; seg.n++; }
}

function run(seg, p, i, j) {
  seg.chars.push(p.slice(i, j));
  for (let k = i; k < j; k++) { seg.starts[seg.n] = k; seg.ends[seg.n] = k + 1; seg.n++; }
}

function finish(seg, visible) {
  return { text: seg.chars.join(""), starts: seg.starts.subarray(0, seg.n), ends: seg.ends.subarray(0, seg.n), visible };
}

function decode(p, start, end) {
  const seg = newSeg(end - start);
  let i = start;
  while (i < end) {
    const j0 = p.indexOf("&", i);
    const j = j0 < 0 || j0 > end ? end : j0;
    if (j > i) { run(seg, p, i, j); i = j; continue; }
    if (p.charCodeAt(i) === 38) {
      const m = matchAt(ENTITY_RE, p, i, end);
      if (m) {
        const ch = entity(m);
        if (ch !== null) { push(seg, ch, i, i + m[0].length); i += m[0].length; continue; }
      }
    }
    push(seg, p[i], i, i + 1);
    i++;
  }
  return finish(seg, false);
}

const SPECIAL_RE = /[<&]/g;

export function parseHtml(p) {
  const vis = newSeg(p.length);
  const attrs = [];
  const tags = []; // [start, end, lowerName, closing]
  let openTail = null;
  const n = p.length;
  const lastGt = p.lastIndexOf(">"); // no tag can start after the last '>': skip the regex (keeps hostile input linear)
  let i = 0;
  while (i < n) {
    SPECIAL_RE.lastIndex = i;
    const sm = SPECIAL_RE.exec(p);
    const j = sm === null ? n : sm.index;
    if (j > i) { run(vis, p, i, j); i = j; continue; }
    const c = p.charCodeAt(i);
    if (c === 60) {
      const m = i < lastGt ? matchAt(TAG_RE, p, i) : null;
      if (m) {
        const end = i + m[0].length;
        tags.push([i, end, m[2].toLowerCase(), m[1] === "/"]);
        const aStart = i + 1 + m[1].length + m[2].length;
        const aText = m[3];
        ATTR_RE.lastIndex = 0;
        let am;
        while ((am = ATTR_RE.exec(aText)) !== null) {
          if (am[0].length === 0) { ATTR_RE.lastIndex++; continue; }
          for (const g of [2, 3, 4]) {
            if (am[g] !== undefined && am[g] !== "") {
              // offset of group g inside the attribute match: the value ends the match (plus a closing quote)
              const close = g === 4 ? 0 : 1;
              const vEnd = aStart + am.index + am[0].length - close;
              attrs.push(decode(p, vEnd - am[g].length, vEnd));
            }
          }
        }
        i = end;
        continue;
      }
      if (openTail === null && i > lastGt && matchAt(TAG_START_RE, p, i)) openTail = i;
    } else if (c === 38) {
      const m = matchAt(ENTITY_RE, p, i);
      if (m) {
        const ch = entity(m);
        if (ch !== null) { push(vis, ch, i, i + m[0].length); i += m[0].length; continue; }
      } else if (openTail === null) {
        const pm = matchAt(PARTIAL_ENTITY_RE, p, i);
        if (pm && i + pm[0].length === n) openTail = i;
      }
    }
    push(vis, p[i], i, i + 1);
    i++;
  }
  return { visible: finish(vis, true), attrs, tags, openTail };
}

export function closers(tags, cut) {
  const stack = [];
  for (const [, e, name, closing] of tags) {
    if (e > cut) break;
    if (closing) {
      if (stack.includes(name)) while (stack.pop() !== name) { /* pop up to the matching open tag */ }
    } else stack.push(name);
  }
  return stack.reverse().map((name) => `</${name}>`).join("");
}

export function tagsWithin(p, tags, start, end) {
  let out = "";
  for (const [s, e, name, closing] of tags) {
    if (s >= start && e <= end) {
      out += closing ? `</${name}>` : (e - s === name.length + 2 ? p.slice(s, e) : `<${name}>`);
    }
  }
  return out;
}
