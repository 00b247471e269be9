// pathprof HTML report: choosing a hot path highlights its lines. Plain JS, no network, works from file://.
// A path is chosen with its function's <select class="paths">, or by the URL fragment #path=NAME:ID (NAME the
// function's linkage name, URI-encoded; ID the path number), which is kept up to date when a path is chosen.
// Highlighted rows get class "hl" (the path's own blocks) or "ctx" (a context path's calling context, which
// ran in earlier paths); <body data-selected="NAME:ID"> names the chosen path.
(function () {
  'use strict';
  var selects = Array.prototype.slice.call(document.querySelectorAll('select.paths'));

  function clear() {
    document.querySelectorAll('tr.hl, tr.ctx').forEach(function (r) {
      r.classList.remove('hl', 'ctx');
    });
    document.querySelectorAll('ol.steps').forEach(function (s) {
      s.hidden = true;
    });
    delete document.body.dataset.selected;
  }

  function mark(list, cls) {
    (list || '').split(' ').forEach(function (n) {
      var row = n && document.getElementById('L' + n);
      if (row) {
        row.classList.add(cls);
      }
    });
  }

  function show(sel, scroll) {
    clear();
    selects.forEach(function (other) {
      if (other !== sel) {
        other.value = '';
      }
    });
    var opt = sel.options[sel.selectedIndex];
    if (!opt || !opt.value) {
      return;
    }
    var steps = document.getElementById(opt.value);
    if (steps) {
      steps.hidden = false;
      mark(steps.dataset.ctx, 'ctx');
      mark(steps.dataset.lines, 'hl');
    }
    document.body.dataset.selected = sel.dataset.fn + ':' + opt.dataset.id;
    var first = scroll && document.querySelector('tr.hl');
    if (first) {
      first.scrollIntoView({ block: 'center' });
    }
  }

  function fromHash() {
    var m = /^#path=(.*):([0-9]+)$/.exec(location.hash);
    if (!m) {
      return;
    }
    var name = decodeURIComponent(m[1]);
    for (var i = 0; i < selects.length; i++) {
      var sel = selects[i];
      if (sel.dataset.fn !== name) {
        continue;
      }
      for (var j = 0; j < sel.options.length; j++) {
        if (sel.options[j].dataset.id === m[2]) {
          sel.selectedIndex = j;
          show(sel, true);
          return;
        }
      }
    }
  }

  selects.forEach(function (sel) {
    sel.addEventListener('change', function () {
      show(sel, false);
      var opt = sel.options[sel.selectedIndex];
      var hash = opt && opt.value ? '#path=' + encodeURIComponent(sel.dataset.fn) + ':' + opt.dataset.id : '#';
      history.replaceState(null, '', hash);
    });
  });
  window.addEventListener('hashchange', fromHash);
  fromHash();
})();
