// Sorting and filtering of table rows (pure), and a small sortable, filterable HTML table.

import { applyWidths } from './dom';
import { escapeHtml } from './format';

export type SortDir = 'asc' | 'desc';

export function sortRows<T>(rows: T[], key: keyof T, dir: SortDir): T[] {
  const sign = dir === 'asc' ? 1 : -1;
  return [...rows].sort((a, b) => {
    const x = a[key], y = b[key];
    if (typeof x === 'number' && typeof y === 'number') return (x - y) * sign;
    return String(x).localeCompare(String(y)) * sign;
  });
}

// Rows whose text fields contain every whitespace-separated term (case-insensitive).
export function filterRows<T>(rows: T[], query: string, fields: (keyof T)[]): T[] {
  const terms = query.toLowerCase().split(/\s+/).filter(Boolean);
  if (!terms.length) return rows;
  return rows.filter((r) => {
    const text = fields.map((f) => String(r[f] ?? '')).join(' ').toLowerCase();
    return terms.every((t) => text.includes(t));
  });
}

export interface Column<T> {
  key: keyof T; label: string; numeric?: boolean; format?: (v: T[keyof T], row: T) => string; title?: string;
}

export interface TableOptions<T> {
  columns: Column<T>[]; rows: T[]; filterFields: (keyof T)[]; sortKey: keyof T; sortDir?: SortDir;
  onRow?: (row: T) => void; footer?: string; placeholder?: string; testId?: string;
}

// Renders into `host`; keeps its own sort and filter state.
export function renderTable<T>(host: HTMLElement, opts: TableOptions<T>): void {
  let key = opts.sortKey, dir: SortDir = opts.sortDir ?? 'desc', filter = '';
  host.innerHTML = `
    <div class="table-tools"><input class="filter" type="search" placeholder="${escapeHtml(opts.placeholder ?? 'Filter')}" aria-label="Filter rows"><span class="muted count"></span></div>
    <div class="table-scroll"><table class="data"${opts.testId ? ` data-testid="${opts.testId}"` : ''}><thead></thead><tbody></tbody></table></div>
    ${opts.footer ? `<div class="table-footer">${opts.footer}</div>` : ''}`;
  const input = host.querySelector<HTMLInputElement>('input.filter')!;
  const thead = host.querySelector('thead')!, tbody = host.querySelector('tbody')!;
  const count = host.querySelector<HTMLElement>('.count')!;
  const draw = () => {
    thead.innerHTML = '<tr>' + opts.columns.map((c) => {
      const arrow = c.key === key ? (dir === 'asc' ? ' ▲' : ' ▼') : '';
      return `<th class="${c.numeric ? 'num' : ''}" data-key="${String(c.key)}"${c.title ? ` title="${escapeHtml(c.title)}"` : ''}>${escapeHtml(c.label)}${arrow}</th>`;
    }).join('') + '</tr>';
    const rows = sortRows(filterRows(opts.rows, filter, opts.filterFields), key, dir);
    count.textContent = `${rows.length} of ${opts.rows.length} rows`;
    tbody.innerHTML = rows.map((r, i) => '<tr data-i="' + i + '"' + (opts.onRow ? ' class="clickable"' : '') + '>' + opts.columns.map((c) => {
      const v = r[c.key];
      const text = c.format ? c.format(v, r) : escapeHtml(String(v));
      return `<td class="${c.numeric ? 'num' : ''}">${text}</td>`;
    }).join('') + '</tr>').join('');
    applyWidths(tbody);
    tbody.querySelectorAll('tr').forEach((tr, i) => tr.addEventListener('click', () => opts.onRow?.(rows[i])));
    thead.querySelectorAll<HTMLElement>('th').forEach((th) => th.addEventListener('click', () => {
      const k = th.dataset.key as keyof T;
      if (k === key) dir = dir === 'asc' ? 'desc' : 'asc';
      else { key = k; dir = opts.columns.find((c) => c.key === k)?.numeric ? 'desc' : 'asc'; }
      draw();
    }));
  };
  input.addEventListener('input', () => { filter = input.value; draw(); });
  draw();
}
