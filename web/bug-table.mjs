// web/bug-table.mjs: the README's break-it table, generated from the actual
// check results: for every bug, run every check (checks.js) on its default
// input (exercises.js) with the bug on, and list the checks that fail.
// A repo script for Node, not part of the page.
//
//   node web/bug-table.mjs             print the table
//   npm run bug-table                  build, then also replace the block between
//   (node web/bug-table.mjs --write)   <!-- bug-table:start --> and
//                                      <!-- bug-table:end --> in README.md
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { loadAttention } from './attention.js';
import { CHECKS, runChecks } from './checks.js';
import { EXERCISES } from './exercises.js';

export const README = fileURLToPath(new URL('../README.md', import.meta.url));
export const START = '<!-- bug-table:start -->';
export const END = '<!-- bug-table:end -->';

/** The Markdown table for one lab (build). */
export function bugTable(lab) {
  const lines = [
    '| Bug | Input | Checks that catch it |',
    '| --- | --- | --- |',
  ];
  for (const exercise of EXERCISES) {
    const failing = runChecks(lab, exercise).filter((r) => !r.passed).map((r) => `\`${r.name}\``);
    lines.push(`| \`${exercise.bug}\` | ${exercise.setting} | ${failing.join(', ') || '(none)'} |`);
  }
  const legend = CHECKS.map((c) => `\`${c.name}\`: ${c.says}`).join('; ');
  return `${lines.join('\n')}\n\nChecks: ${legend}.`;
}

/** The text between the markers in README.md, or null when there are none. */
export function readmeBlock(text = readFileSync(README, 'utf8')) {
  const start = text.indexOf(START);
  const end = text.indexOf(END);
  if (start < 0 || end < start) return null;
  return text.slice(start + START.length, end).trim();
}

function replaceBlock(text, table) {
  const start = text.indexOf(START);
  const end = text.indexOf(END);
  return `${text.slice(0, start + START.length)}\n${table}\n${text.slice(end)}`;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const table = bugTable(await loadAttention());
  console.log(table);
  if (process.argv.includes('--write')) {
    let text = '';
    try {
      text = readFileSync(README, 'utf8');
    } catch {
      // no README: print only
    }
    if (readmeBlock(text) === null) {
      console.error(`\nREADME.md has no ${START} … ${END} block: printed only.`);
    } else {
      writeFileSync(README, replaceBlock(text, table));
      console.error('\nREADME.md updated.');
    }
  }
}
