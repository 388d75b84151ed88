// Colour by layer: framework ops in blues, the runtime in ambers, device kernels in
// greens; within a layer the name picks a stable shade, so one op reads the same
// everywhere. Light and dark themes get different lightness.

import type { Layer } from './api';

const HUES: Record<Layer, [number, number]> = {
  framework: [212, 250],  // blue → indigo
  runtime: [28, 46],      // amber
  device: [150, 178],     // green → teal
};

// FNV-1a: a small stable hash of a name.
export function hashName(name: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < name.length; i++) {
    h ^= name.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h >>> 0;
}

export type Theme = 'light' | 'dark';

export function eventColor(layer: Layer, name: string, theme: Theme): string {
  const [lo, hi] = HUES[layer] ?? HUES.framework;
  const h = hashName(name);
  const hue = lo + (h % 1000) / 1000 * (hi - lo);
  const sat = 55 + ((h >>> 10) % 20);
  const light = theme === 'dark' ? 52 + ((h >>> 16) % 12) : 58 + ((h >>> 16) % 14);
  return `hsl(${hue.toFixed(0)} ${sat}% ${light}%)`;
}

export function layerSwatch(layer: Layer, theme: Theme): string {
  const [lo, hi] = HUES[layer];
  return `hsl(${(lo + hi) / 2} 62% ${theme === 'dark' ? 56 : 52}%)`;
}

// Readable label colour on a fill of the given lightness (all our fills are mid-light).
export const labelColor = (theme: Theme) => (theme === 'dark' ? '#0b1020' : '#0e1726');
