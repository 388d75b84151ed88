// Bundles each test/*.test.ts with esbuild (for node) and runs them with node's test runner.
import { build } from 'esbuild';
import { readdirSync, rmSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const out = join(root, '.test-out');
rmSync(out, { recursive: true, force: true });
const tests = readdirSync(join(root, 'test')).filter((f) => f.endsWith('.test.ts'));
await build({
  entryPoints: tests.map((f) => join(root, 'test', f)),
  bundle: true, platform: 'node', format: 'esm', target: 'node18', outdir: out, outExtension: { '.js': '.mjs' },
  logLevel: 'warning',
});
const files = tests.map((f) => join(out, f.replace(/\.ts$/, '.mjs')));
const r = spawnSync(process.execPath, ['--test', ...files], { stdio: 'inherit' });
process.exit(r.status ?? 1);
