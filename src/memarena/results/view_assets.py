"""The viewer page's inline CSS and JS (:mod:`memarena.results.viewer`).

The JS shows one view at a time from the URL fragment (``#runs``, ``#run-<i>``,
``#ep-<i>-<j>``, ``#compare?runs=<i>,<k>&task=<task id>``), filters and sorts the runs and
episodes tables, and draws the comparison view from the page's embedded JSON
(``<script id="compare-data" type="application/json">``): a team run's agent views (its
``views``) start collapsed into one column of their group. It writes text only through
``textContent``, so nothing from a run is ever parsed as HTML.
"""

CSS = """
body{font-family:system-ui,sans-serif;margin:1.5em;color:#222}
nav.top a{margin-right:1.2em}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:3px 6px;
vertical-align:top;text-align:left}thead th{background:#eee}
table.sortable thead th{cursor:pointer;user-select:none}
th[aria-sort=ascending]::after{content:" \\25B2"}th[aria-sort=descending]::after{content:" \\25BC"}
table.runs{width:100%;table-layout:auto}
table.runs td,table.runs th{overflow-wrap:break-word}
table.runs td.flags{min-width:10em;max-width:26em;overflow-wrap:anywhere}
pre{white-space:pre-wrap;margin:0;max-width:60em}.view{display:none}.view.shown{display:block}
mark.memory{background:#fff3b0;outline:1px solid #e0b000;display:inline-block}
code.memid{background:#e8f0ff;padding:0 3px;margin:1px;display:inline-block;cursor:help}
.invalid{color:#b00}.valid{color:#070}.none,.note,.dir{color:#888}
.msg{border-left:3px solid #ccc;padding-left:6px;margin:4px 0}.msg.user{border-color:#48c}
.msg.assistant{border-color:#4a4}.role{font-weight:bold;font-size:.85em}
.filters{display:flex;flex-wrap:wrap;gap:.6em;align-items:center;margin:.5em 0}
.filters .count{color:#666}
pre.memtext{background:#fff8d6;border:1px solid #e0b000;padding:2px 4px;max-height:14em;
overflow:auto;font-size:.9em}
.compare-scroll{overflow-x:auto}
table.compare-steps td{min-width:18em;max-width:36em}
table.compare-steps pre.obs{font-size:.85em;color:#444;max-height:10em;overflow:auto}
tr.diverge>th,tr.diverge>td{background:#ffece8}tr.diverge{outline:2px solid #d33}
.badge{background:#d33;color:#fff;border-radius:3px;padding:0 4px;font-size:.8em;
display:inline-block;margin-left:.3em}
td.ended{color:#999;background:#f6f6f6}
.chooser label{display:block}
code.act{font-weight:bold;background:#eef;padding:0 3px}
ul.memids{list-style:none;padding:0;margin:2px 0}ul.memids li{margin:1px 0}
.memline{font-size:.85em;color:#553}
tr.current>td{background:#f0f6ff}
table.compare-steps .group-start{border-left:3px solid #789}
th.run-group{background:#dde6f3}.view-controls{display:flex;gap:.4em;margin-top:2px}
table.compare-steps td.views,table.compare-steps th.views{min-width:14em;max-width:30em}
ul.views{list-style:none;padding:0;margin:0;font-weight:normal}
.vstep{overflow-wrap:anywhere;margin:1px 0}.vname{font-weight:bold;margin-right:.4em}
"""

JS = r"""
var DATA = JSON.parse(document.getElementById('compare-data').textContent);
var NO_TEXT = 'not in the memory snapshot (made at retrieval); see the step\'s memory text';

function el(tag, cls, text) {
  var e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined && text !== null) e.textContent = String(text);
  return e;
}
function parseHash() {
  var h = location.hash || '#runs', q = h.indexOf('?');
  return {id: q < 0 ? h.slice(1) : h.slice(1, q),
          params: new URLSearchParams(q < 0 ? '' : h.slice(q + 1))};
}
function show() {
  var p = parseHash(), target = document.getElementById(p.id);
  if (!target || !target.classList.contains('view')) target = document.getElementById('runs');
  document.querySelectorAll('.view').forEach(function (v) {
    v.classList.toggle('shown', v === target);
  });
  if (target.id === 'compare') renderCompare(p.params);
  window.scrollTo(0, 0);
}

/* filters: the controls of a .filters box narrow the rows of the table it names */
function matches(row, select) {
  var v = row.getAttribute('data-' + select.dataset.key) || '';
  if (!select.value) return true;
  if (select.dataset.key !== 'flags') return v === select.value;
  if (select.value === '(none)') return v === '';
  return (',' + v + ',').indexOf(',' + select.value + ',') >= 0;
}
function applyFilters(box) {
  var rows = document.getElementById(box.dataset.table).tBodies[0].rows;
  var text = box.querySelector('input.filter-text').value.toLowerCase();
  var selects = Array.prototype.slice.call(box.querySelectorAll('select.filter'));
  var shown = 0;
  for (var i = 0; i < rows.length; i++) {
    var row = rows[i];
    var ok = selects.every(function (s) { return matches(row, s); });
    if (ok && text) ok = row.textContent.toLowerCase().indexOf(text) >= 0;
    row.hidden = !ok;
    if (ok) shown++;
  }
  box.querySelector('.count').textContent = shown + ' of ' + rows.length + ' shown';
}
document.querySelectorAll('.filters').forEach(function (box) {
  ['input', 'change'].forEach(function (ev) {
    box.addEventListener(ev, function () { applyFilters(box); });
  });
  applyFilters(box);
});

/* sort: a click on a column's header sorts by it, a second click reverses */
function cellKey(row, idx) {
  var c = row.cells[idx];
  if (!c) return '';
  return c.hasAttribute('data-sort') ? c.getAttribute('data-sort') : c.textContent.trim();
}
function sortBy(th) {
  var table = th.closest('table'), idx = Array.prototype.indexOf.call(th.parentNode.children, th);
  var asc = th.getAttribute('aria-sort') !== 'ascending';
  th.parentNode.querySelectorAll('th').forEach(function (h) { h.removeAttribute('aria-sort'); });
  th.setAttribute('aria-sort', asc ? 'ascending' : 'descending');
  var body = table.tBodies[0], rows = Array.prototype.slice.call(body.rows);
  var blank = function (t) { return t === '' || t === '-'; };
  var numeric = rows.every(function (r) {
    var t = cellKey(r, idx);
    return blank(t) || (isFinite(t) && !isNaN(parseFloat(t)));
  });
  rows.sort(function (a, b) {
    var x = cellKey(a, idx), y = cellKey(b, idx), c;
    if (numeric) {
      x = blank(x) ? -Infinity : parseFloat(x);
      y = blank(y) ? -Infinity : parseFloat(y);
      c = x < y ? -1 : x > y ? 1 : 0;
    } else {
      c = x.localeCompare(y, undefined, {numeric: true});
    }
    return asc ? c : -c;
  });
  rows.forEach(function (r) { body.appendChild(r); });
}
function sortable(root) {
  root.querySelectorAll('table.sortable thead th').forEach(function (th) {
    th.addEventListener('click', function () { sortBy(th); });
  });
}
sortable(document);

/* the comparison view: the chosen runs' shared tasks, one task's trajectories side by side */
function goCompare(scope) {
  var ticked = document.querySelectorAll(scope + ' input.pick:checked');
  location.hash = '#compare?runs=' + Array.prototype.map.call(ticked, function (c) {
    return c.value;
  }).join(',');
}
document.getElementById('compare-selected').addEventListener('click', function () {
  goCompare('#runs');
});
document.getElementById('compare-apply').addEventListener('click', function () {
  goCompare('#compare');
});
function onlyDiverging() {
  var only = document.getElementById('only-diverging').checked;
  document.querySelectorAll('#compare-tasks tbody tr').forEach(function (r) {
    r.hidden = only && r.getAttribute('data-diverge') === 'none';
  });
}
document.getElementById('only-diverging').addEventListener('change', onlyDiverging);
function chosen(params) {
  return (params.get('runs') || '').split(',').filter(function (x) { return x !== ''; })
    .map(Number).filter(function (i, k, all) {
      return i >= 0 && i < DATA.runs.length && all.indexOf(i) === k;
    });
}
function episodesOf(task, runs) {
  return DATA.episodes.filter(function (e) {
    return e.task === task && runs.indexOf(e.r) >= 0;
  }).sort(function (a, b) {
    return runs.indexOf(a.r) - runs.indexOf(b.r) ||
      String(a.agent).localeCompare(String(b.agent)) || a.run - b.run;
  });
}
/* the first step at which the trajectories' actions differ (an ended one differs), else -1 */
function divergence(cols) {
  if (cols.length < 2) return -1;
  var n = Math.max.apply(null, cols.map(function (c) { return c.steps.length; }));
  for (var k = 0; k < n; k++) {
    var acts = cols.map(function (c) { return k < c.steps.length ? c.steps[k].a : null; });
    if (acts.some(function (a) { return a !== acts[0]; })) return k;
  }
  return -1;
}
function outcome(eps) {
  if (eps.length === 1) {
    return (eps[0].success ? 'success' : eps[0].status) + ', ' + eps[0].steps.length + ' steps';
  }
  var ok = eps.filter(function (e) { return e.success; }).length;
  return ok + '/' + eps.length + ' succeeded';
}
function renderCompare(params) {
  var runs = chosen(params), task = params.get('task');
  document.querySelectorAll('#compare input.pick').forEach(function (c) {
    c.checked = runs.indexOf(Number(c.value)) >= 0;
  });
  var list = document.getElementById('compare-tasks');
  var grid = document.getElementById('compare-grid');
  var msg = document.getElementById('compare-msg');
  list.textContent = '';
  grid.textContent = '';
  if (runs.length < 2) {
    msg.textContent = 'Choose two or more runs above, then "Compare".';
    return;
  }
  var per = runs.map(function (r) {
    return new Set(DATA.episodes.filter(function (e) { return e.r === r; })
      .map(function (e) { return e.task; }));
  });
  var tasks = Array.from(per[0]).filter(function (t) {
    return per.every(function (s) { return s.has(t); });
  }).sort();
  msg.textContent = tasks.length ? tasks.length + ' tasks evaluated in every chosen run; ' +
    'pick one to see its trajectories side by side.' : 'The chosen runs share no evaluated task.';
  var table = el('table', 'compare-tasks sortable'), head = el('tr'), body = el('tbody');
  var titles = runs.map(function (r) { return DATA.runs[r].title; });
  ['task'].concat(titles, ['first divergence']).forEach(function (h) {
    head.appendChild(el('th', null, h));
  });
  table.appendChild(el('thead')).appendChild(head);
  tasks.forEach(function (t) {
    var tr = el('tr', t === task ? 'current' : ''), td = el('td');
    var a = el('a', 'task-link', t), d = divergence(episodesOf(t, runs));
    a.href = '#compare?runs=' + runs.join(',') + '&task=' + encodeURIComponent(t);
    td.appendChild(a);
    tr.appendChild(td);
    runs.forEach(function (r) { tr.appendChild(el('td', null, outcome(episodesOf(t, [r])))); });
    tr.appendChild(el('td', null, d < 0 ? 'none' : 'step ' + d));
    tr.setAttribute('data-diverge', d < 0 ? 'none' : String(d));
    body.appendChild(tr);
  });
  table.appendChild(body);
  list.appendChild(table);
  sortable(list);
  onlyDiverging();
  if (task && tasks.indexOf(task) >= 0) renderGrid(task, runs, grid);
}
function memoryCell(c, s, k) {
  var box = el('div', 'mem'), ids = s.ids || [], texts = DATA.texts[c.r] || {}, ent = s.ent || {};
  var known = 0;
  if (s.rec === false) {
    box.appendChild(el('span', 'note', 'memory not recorded (protocol.record_memory=false)'));
    return box;
  }
  if (ids.length) {
    var ul = el('ul', 'memids');
    ids.forEach(function (i) {
      var li = el('li'), code = el('code', 'memid', i), text = ent[i] || texts[i];
      code.title = text || NO_TEXT;
      li.appendChild(code);
      if (text) { li.appendChild(el('span', 'memline', ' ' + text)); known++; }
      ul.appendChild(li);
    });
    box.appendChild(ul);
  }
  if (s.mem === null || s.mem === undefined) {
    if (ids.length && !known) {
      box.appendChild(el('span', 'note',
        'memory text not recorded (set protocol.record_memory=true)'));
    } else if (!ids.length) {
      box.appendChild(el('span', 'none', 'no memory shown'));
    }
  } else if (s.mem === '') {
    if (!ids.length) box.appendChild(el('span', 'none', 'no memory shown'));
  } else if (k > 0 && c.steps[k - 1].mem === s.mem) {
    box.appendChild(el('span', 'note', 'memory text as in step ' + (k - 1)));
  } else {
    var det = el('details', 'memory-text');
    det.open = !known;
    det.appendChild(el('summary', null, 'memory text shown'));
    det.appendChild(el('pre', 'memtext', s.mem));
    box.appendChild(det);
  }
  return box;
}
/* a team run (two or more agent views) is one column group; its views start collapsed into one
   column, and its header expands them or shows one in full: 'collapsed', 'all' or 'view:<name>' */
var VIEW_MODE = {};
function isTeam(r) { return DATA.runs[r].views.length > 1; }
function viewMode(r) { return isTeam(r) ? VIEW_MODE[r] || 'collapsed' : 'all'; }
function shownColumns(r, eps) {
  var mode = viewMode(r);
  if (mode === 'all') return eps;
  var one = eps.filter(function (e) { return 'view:' + e.agent === mode; });
  return one.length ? one : [{r: r, eps: eps}];  /* the collapsed column holds the views */
}
function viewLabel(e, eps) {
  var repeated = eps.some(function (o) { return o !== e && o.agent === e.agent; });
  return String(e.agent) + (repeated ? ' run ' + e.run : '');
}
function outcomeText(e) {
  var p = e.progress === null || e.progress === undefined ? '' :
    ', progress ' + Number(e.progress).toFixed(2);
  return (e.success ? 'success' : e.status) + p + ', ' + e.steps.length + ' steps';
}
function groupHeader(g, redraw) {
  var r = g.r, mode = viewMode(r), views = DATA.runs[r].views;
  var th = el('th', 'run-group'), a = el('a', 'run-link', DATA.runs[r].title);
  th.colSpan = g.shown.length;
  th.setAttribute('data-run', String(r));
  a.href = '#run-' + r;
  th.appendChild(a);
  if (!isTeam(r)) return th;
  var bar = el('div', 'view-controls');
  var toggle = el('button', 'views-toggle',
    mode === 'collapsed' ? 'expand ' + views.length + ' views' : 'collapse views');
  toggle.type = 'button';
  toggle.addEventListener('click', function () {
    VIEW_MODE[r] = mode === 'collapsed' ? 'all' : 'collapsed';
    redraw();
  });
  var pick = el('select', 'view-pick');
  pick.setAttribute('aria-label', 'show one view of run ' + r + ' in full');
  pick.appendChild(el('option', null, 'one view in full')).value = '';
  views.forEach(function (v) { pick.appendChild(el('option', null, v)).value = 'view:' + v; });
  pick.value = mode.indexOf('view:') === 0 ? mode : '';
  pick.addEventListener('change', function () {
    VIEW_MODE[r] = pick.value || 'collapsed';
    redraw();
  });
  bar.appendChild(toggle);
  bar.appendChild(pick);
  th.appendChild(bar);
  return th;
}
function columnHeader(c) {
  var th = el('th'), a = el('a', 'episode-link', DATA.runs[c.r].title);
  a.href = '#ep-' + c.r + '-' + c.j;
  th.appendChild(a);
  th.appendChild(el('div', 'note', (c.agent ? 'agent ' + c.agent + ', ' : '') + 'run ' + c.run));
  th.appendChild(el('div', c.success ? 'valid' : 'invalid',
    (c.success ? 'success' : c.status) + ', ' + c.steps.length + ' steps'));
  return th;
}
function summaryHeader(c) {
  var th = el('th', 'views'), ul = el('ul', 'views');
  c.eps.forEach(function (e) {
    var li = el('li'), a = el('a', 'episode-link vname', viewLabel(e, c.eps));
    a.href = '#ep-' + e.r + '-' + e.j;
    li.appendChild(a);
    li.appendChild(el('span', e.success ? 'valid' : 'invalid', ' ' + outcomeText(e)));
    ul.appendChild(li);
  });
  th.appendChild(ul);
  return th;
}
function stepCell(c, k) {
  if (k >= c.steps.length) return el('td', 'ended', '(episode ended)');
  var s = c.steps[k], td = el('td');
  td.appendChild(el('code', 'act', s.a));
  td.appendChild(el('span', s.ok ? 'valid' : 'invalid',
    ' ' + (s.ok ? 'valid' : 'invalid') + (s.fl ? ' (' + s.fl + ')' : '')));
  td.appendChild(el('pre', 'obs', s.o));
  td.appendChild(memoryCell(c, s, k));
  return td;
}
function summaryCell(c, k) {
  var td = el('td', 'views');
  c.eps.forEach(function (e) {
    var line = el('div', 'vstep'), s = e.steps[k];
    line.appendChild(el('span', 'vname', viewLabel(e, c.eps)));
    if (!s) { line.appendChild(el('span', 'none', ' (ended)')); td.appendChild(line); return; }
    line.appendChild(el('code', 'act', s.a));
    if (!s.ok) {
      line.appendChild(el('span', 'invalid', ' invalid' + (s.fl ? ' (' + s.fl + ')' : '')));
    }
    td.appendChild(line);
  });
  return td;
}
function renderGrid(task, runs, grid) {
  var cols = episodesOf(task, runs), d = divergence(cols);
  grid.appendChild(el('h3', null, 'Task ' + task));
  grid.appendChild(el('pre', 'goal', cols[0].goal));
  grid.appendChild(el('p', 'divergence-note', cols.length < 2 ?
    'Only one trajectory of this task in the chosen runs.' : d < 0 ?
    'The trajectories are identical: the same action at every step.' :
    'First divergence at step ' + d + ': the actions differ there (marked in red).'));
  var grouped = runs.some(isTeam), groups = runs.map(function (r) {
    var eps = cols.filter(function (c) { return c.r === r; });
    return {r: r, shown: shownColumns(r, eps)};
  });
  var redraw = function () { grid.textContent = ''; renderGrid(task, runs, grid); };
  var wrap = el('div', 'compare-scroll'), table = el('table', 'compare-steps');
  var thead = el('thead'), head = el('tr'), body = el('tbody'), step = el('th', null, 'step');
  if (grouped) {
    var top = el('tr', 'run-groups');
    table.appendChild(el('colgroup'));
    step.rowSpan = 2;
    top.appendChild(step);
    groups.forEach(function (g) {
      table.appendChild(el('colgroup', 'run-group')).span = g.shown.length;
      top.appendChild(groupHeader(g, redraw));
    });
    thead.appendChild(top);
  } else {
    head.appendChild(step);
  }
  /* each shown column of each group, its header or step-k cell; a group's first is marked */
  var eachColumn = function (row, make) {
    groups.forEach(function (g) {
      g.shown.forEach(function (c, i) {
        var cell = make(c);
        if (grouped && i === 0) cell.classList.add('group-start');
        row.appendChild(cell);
      });
    });
  };
  eachColumn(head, function (c) { return c.eps ? summaryHeader(c) : columnHeader(c); });
  table.appendChild(thead).appendChild(head);
  var n = Math.max.apply(null, cols.map(function (c) { return c.steps.length; }));
  for (var k = 0; k < n; k++) {
    var tr = el('tr', k === d ? 'cstep diverge' : 'cstep'), th = el('th', null, String(k));
    if (k === d) th.appendChild(el('span', 'badge', 'first divergence'));
    tr.appendChild(th);
    eachColumn(tr, function (c) { return c.eps ? summaryCell(c, k) : stepCell(c, k); });
    body.appendChild(tr);
  }
  table.appendChild(body);
  wrap.appendChild(table);
  grid.appendChild(wrap);
}
window.addEventListener('hashchange', show);
show();
"""
