// Light and dark themes: the user's choice (kept in localStorage) or the system's.
import { layerSwatch, type Theme } from './colors';

export function currentTheme(): Theme {
  return document.documentElement.dataset.theme === 'dark' ? 'dark' : 'light';
}

// The layers' colours as CSS variables (--swatch-framework, ...) for the legend dots: set
// through the CSSOM, since the page may carry no inline style.
function setSwatches(theme: Theme): void {
  for (const layer of ['framework', 'runtime', 'device'] as const)
    document.documentElement.style.setProperty(`--swatch-${layer}`, layerSwatch(layer, theme));
}

export function initTheme(onChange: () => void): void {
  let saved: string | null = null;
  try { saved = localStorage.getItem('opscope-theme'); } catch { /* private mode */ }
  const system = window.matchMedia?.('(prefers-color-scheme: dark)').matches ? 'dark' : 'light';
  document.documentElement.dataset.theme = saved === 'dark' || saved === 'light' ? saved : system;
  setSwatches(currentTheme());
  document.getElementById('theme')?.addEventListener('click', () => {
    const next = currentTheme() === 'dark' ? 'light' : 'dark';
    document.documentElement.dataset.theme = next;
    setSwatches(next);
    try { localStorage.setItem('opscope-theme', next); } catch { /* ignore */ }
    onChange();
  });
}
