// `npm run example [name]`: an example of examples/ (send_watch_approve by default) run as it is
// written, on Node 20, with the local stack's values: `python3 dev.py run` writes them to
// .parley/client.env at the repository's root (PARLEY_CLIENT_ENV: another file); variables set
// already win. TypeScript's own transpiler turns the example into JavaScript beside it (so it
// imports this package as `@parley/client`, and its dependencies from node_modules), then node
// runs it.

import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readFile, rm, writeFile } from 'node:fs/promises';
import ts from 'typescript';

const name = process.argv[2] ?? 'send_watch_approve';
const source = new URL(`../examples/${name}.ts`, import.meta.url);
const runnable = new URL(`../examples/.${name}.mjs`, import.meta.url);
const settings = process.env.PARLEY_CLIENT_ENV ?? new URL('../../../.parley/client.env', import.meta.url).pathname;
if (existsSync(settings)) process.loadEnvFile(settings);

const { outputText } = ts.transpileModule(await readFile(source, 'utf8'), {
  compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
});
await writeFile(runnable, outputText);
const child = spawn(process.execPath, [runnable.pathname], { stdio: 'inherit' });
const code = await new Promise((resolve) => child.on('exit', (status, signal) => resolve(status ?? (signal ? 1 : 0))));
await rm(runnable, { force: true });
process.exit(code);
