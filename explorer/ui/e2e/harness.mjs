// What the browser tests share: the explorer's server started on a free port, Debian's
// Chromium driven headless by playwright-core, and named checks that screenshot a failure.
import { chromium } from 'playwright-core';
import { spawn } from 'node:child_process';
import { join } from 'node:path';

// Starts `bin args...` and resolves with the URL it prints ("opscope explore: http://...").
export function startServer(bin, args) {
  const proc = spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  const url = new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('server did not start:\n' + log)), 30000);
    const onData = (d) => {
      log += d;
      const m = /opscope explore: (http:\/\/\S+)/.exec(log);
      if (m) { clearTimeout(timer); resolve(m[1]); }
    };
    proc.stdout.on('data', onData);
    proc.stderr.on('data', onData);
    proc.on('exit', (code) => reject(new Error(`server exited (${code}):\n${log}`)));
  });
  return url.then((u) => ({ url: u, proc, log: () => log }));
}

export function launchBrowser() {
  return chromium.launch({
    executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
      '--disable-component-update', '--disable-sync', '--no-first-run'],
  });
}

export const assert = (cond, msg) => { if (!cond) throw new Error(msg); };

// Named checks on `page`: each passes or fails on its own, a failure saves a screenshot.
export function checker(page, out) {
  const state = { passed: 0, failed: 0 };
  const check = async (name, fn) => {
    try {
      await fn();
      state.passed++;
      console.log(`ok   ${name}`);
    } catch (e) {
      state.failed++;
      console.log(`FAIL ${name}\n     ${String(e.message ?? e).split('\n').join('\n     ')}`);
      await page.screenshot({ path: join(out, `fail-${name.replace(/\W+/g, '-')}.png`) }).catch(() => {});
    }
  };
  const shot = (name) => page.screenshot({ path: join(out, `${name}.png`) });
  return { check, shot, state };
}

// Waits until the page's timelines (window.__opscope.timelines) have drawn.
export async function timelineReady(page, n = 1) {
  await page.waitForFunction((n) => {
    const t = window.__opscope?.timelines;
    return t && t.length >= n && t.every((x) => x.ready);
  }, n, { timeout: 15000 });
  await page.waitForTimeout(150);  // the next animation frame has drawn
}
