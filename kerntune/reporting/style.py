"""The HTML report's stylesheet, inlined into the page: system fonts, one
column of cards that narrows with the window, tables and the diff scrolling
inside their own boxes so the page itself never scrolls sideways."""

CSS = """
:root {
  --ink: #1a202c; --muted: #4a5568; --faint: #718096; --line: #e2e8f0; --bg: #f4f6fa; --card: #fff;
  --blue: #2b6cb0; --orange: #dd6b20; --green: #2f855a; --red: #c53030;
  --sans: system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", "Noto Sans", "Liberation Sans",
          "DejaVu Sans", Arial, sans-serif;
  --mono: ui-monospace, SFMono-Regular, Menlo, Consolas, "DejaVu Sans Mono", "Liberation Mono", monospace;
}
* { box-sizing: border-box; }
html { -webkit-text-size-adjust: 100%; }
body { margin: 0; background: var(--bg); color: var(--ink); font: 16px/1.55 var(--sans); }
.wrap { max-width: 1180px; margin: 0 auto; padding: 0 20px; }
code, pre { font-family: var(--mono); font-size: 0.86em; }
code { background: #edf2f7; border-radius: 4px; padding: 0.05em 0.35em; overflow-wrap: anywhere; }
pre { background: #1a202c; color: #e2e8f0; padding: 12px 14px; border-radius: 8px; overflow-x: auto;
      white-space: pre-wrap; overflow-wrap: anywhere; }
a { color: var(--blue); }

.hero { background: linear-gradient(135deg, #1a365d 0%, #2b6cb0 70%, #3182ce 100%); color: #fff;
        padding: 28px 0 30px; }
.hero .eyebrow { font-size: 0.85rem; letter-spacing: 0.02em; opacity: 0.85; overflow-wrap: anywhere; }
.hero h1 { margin: 6px 0 8px; font-size: clamp(1.6rem, 4vw, 2.4rem); line-height: 1.2; overflow-wrap: anywhere; }
.hero .headline { font-size: clamp(1.05rem, 2.2vw, 1.3rem); max-width: 62em; margin: 0 0 18px; }
.pill { display: inline-block; vertical-align: middle; font-size: 0.8rem; font-weight: 600; padding: 3px 10px;
        border-radius: 999px; background: rgba(255,255,255,0.18); border: 1px solid rgba(255,255,255,0.5); }
.pill.good { background: #c6f6d5; color: #22543d; border-color: #9ae6b4; }
.pill.partial { background: #fefcbf; color: #744210; border-color: #f6e05e; }
.pill.bad { background: #fed7d7; color: #742a2a; border-color: #feb2b2; }
.pill.neutral { background: #e2e8f0; color: #2d3748; border-color: #cbd5e0; }
.tiles { display: grid; grid-template-columns: repeat(auto-fit, minmax(150px, 1fr)); gap: 10px; }
.tile { background: rgba(255,255,255,0.12); border: 1px solid rgba(255,255,255,0.25); border-radius: 10px;
        padding: 10px 14px; }
.tile.hero { background: #fff; color: var(--ink); }
.tile .big { font-size: 1.6rem; font-weight: 700; line-height: 1.2; font-variant-numeric: tabular-nums;
             white-space: nowrap; }
.tile.hero .big { color: var(--blue); }
.tile .small { font-size: 0.8rem; opacity: 0.9; }

.banner { margin: 18px 0 0; background: #fffbea; border: 1px solid #f6e05e; border-left: 6px solid #d69e2e;
          border-radius: 8px; padding: 12px 16px; }
.banner ul { margin: 6px 0 0; padding-left: 1.2em; }
.toc { display: flex; flex-wrap: wrap; gap: 8px; margin: 18px 0 6px; }
.toc a { text-decoration: none; font-size: 0.85rem; background: #fff; border: 1px solid var(--line);
         border-radius: 999px; padding: 4px 12px; color: var(--muted); }
.toc a:hover { border-color: var(--blue); color: var(--blue); }

.card { background: var(--card); border: 1px solid var(--line); border-radius: 12px; margin: 16px 0;
        padding: 18px 22px 20px; box-shadow: 0 1px 2px rgba(26,32,44,0.04); min-width: 0; }
.card h2 { margin: 0 0 4px; font-size: 1.3rem; }
.card h3 { margin: 20px 0 6px; font-size: 1.05rem; }
.caption { color: var(--muted); margin: 0 0 12px; font-size: 0.93rem; max-width: 70em; }
.missing, .note { color: var(--muted); font-style: italic; }
figure { margin: 0 0 12px; }
img.plot { display: block; width: 100%; max-width: 1000px; height: auto; margin: 0 auto; }

.table-wrap { overflow-x: auto; margin: 8px 0; }
table { border-collapse: collapse; width: 100%; font-size: 0.88rem; }
.table-wrap table { min-width: 640px; }
td code { overflow-wrap: normal; }
th, td { padding: 6px 10px; border-bottom: 1px solid var(--line); text-align: left; vertical-align: top; }
th { font-weight: 600; color: var(--muted); background: #f7fafc; white-space: nowrap; }
td:first-child { white-space: nowrap; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
tr.total td { font-weight: 700; border-top: 2px solid var(--line); }
tbody tr:hover td { background: #f7fafc; }
details { margin: 8px 0; }
summary { cursor: pointer; color: var(--muted); }
.plans { color: var(--muted); font-size: 0.9rem; }

.diffstat { margin: 0 0 8px; font-weight: 600; }
.diffstat .minus { color: var(--red); } .diffstat .plus { color: var(--green); }
.diff-wrap { border: 1px solid var(--line); border-radius: 8px; overflow-x: auto; }
table.diff { table-layout: fixed; font: 12.5px/1.45 var(--mono); }
table.diff col.ln { width: 3.2em; }
table.diff th { font-family: var(--sans); white-space: normal;
                overflow-wrap: anywhere; }
table.diff th span { display: block; font-weight: 400; font-size: 0.8rem; color: var(--faint); }
table.diff td { padding: 0 8px; border: 0; }
table.diff td.ln { color: #a0aec0; text-align: right; user-select: none; background: #fafbfc; }
table.diff td.code { white-space: pre-wrap; overflow-wrap: anywhere; }
table.diff td.del { background: #fff5f5; } table.diff td.add { background: #f0fff4; }
table.diff td.empty { background: #f7fafc; }
table.diff del { background: #fed7d7; text-decoration: none; border-radius: 2px; }
table.diff ins { background: #c6f6d5; text-decoration: none; border-radius: 2px; }
table.diff tr.fold td { text-align: center; color: var(--faint); background: #f1f5f9; font-family: var(--sans);
                        font-size: 0.8rem; padding: 2px; }
tbody tr:hover td.del, tbody tr:hover td.add { filter: brightness(0.98); }

footer { color: var(--faint); font-size: 0.85rem; padding: 10px 20px 40px; }
@media (max-width: 640px) {
  body { font-size: 15px; }
  .wrap { padding: 0 12px; }
  .card { padding: 14px 12px; border-radius: 10px; }
  table.diff { font-size: 11px; }
  table.diff col.ln { width: 2.4em; }
  .tile .big { font-size: 1.3rem; }
}
@media print {
  body { background: #fff; } .toc { display: none; } .card { box-shadow: none; break-inside: avoid; }
}
"""
