// Sizes that depend on data, set the way the server's Content-Security-Policy allows:
// HTML carries no style attributes (style-src 'self' refuses them), so a bar is written
// as <span data-width="42.0%"> and its width set here, through the CSSOM.
export function applyWidths(root: ParentNode): void {
  root.querySelectorAll<HTMLElement>('[data-width]').forEach((el) => { el.style.width = el.dataset.width!; });
}

// A width for data-width: a fraction as a percentage in [0, 100].
export const widthPct = (fraction: number, digits = 1) =>
  `${Math.max(0, Math.min(100, fraction * 100)).toFixed(digits)}%`;
