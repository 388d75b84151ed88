// Light and dark themes: the user's choice (kept in localStorage) or the system's.
import type { Theme } from './colors';

export function currentTheme(): Theme {
  return document.documentElement.dataset.theme === 'dark' ? 'dark' : 'light';
}

export function initTheme(onChange: () => void): void {
  let saved: string | null = null;
  try { saved = localStorage.getItem('opscope-theme'); } catch { /* private mode */ }
  const system = window.matchMedia?.('(prefers-color-scheme: dark)').matches ? 'dark' : 'light';
  document.documentElement.dataset.theme = saved === 'dark' || saved === 'light' ? saved : system;
  document.getElementById('theme')?.addEventListener('click', () => {
    const next = currentTheme() === 'dark' ? 'light' : 'dark';
    document.documentElement.dataset.theme = next;
    try { localStorage.setItem('opscope-theme', next); } catch { /* ignore */ }
    onChange();
  });
}
