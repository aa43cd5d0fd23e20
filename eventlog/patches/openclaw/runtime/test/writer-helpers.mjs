// Shared by the writer tests: read a JSONL file's complete lines, and check a file's hash chain from its genesis.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { genesis } from "../writer-format.mjs";
import { chainHash } from "../writer-commit.mjs";

export const readLines = (p) => readFileSync(p, "utf8").split("\n").slice(0, -1);

/** Assert that every line of root/rel chains on from the one before (the first from the genesis); → the last hash. */
export function chainOk(root, rel) {
  let prev = genesis(rel);
  for (const line of readLines(join(root, rel))) {
    assert.equal(JSON.parse(line).prev, prev, `${rel}: chain broken`);
    prev = chainHash(line);
  }
  return prev;
}
