// The pages' words from the shop's one message catalog (shop/locale), for scripts.
//
// base.html loads this first and names the catalog of the page's language in
// <html data-i18n-catalog="/i18n/zh_CN.json">. A script then writes English and
// marks it, as the Python code does (pybabel extracts these calls from static/*.js):
//
//   await i18n.ready;                       // the catalog is loaded (or failed: English)
//   const {_, ngettext} = i18n;
//   _("Live sale")                          // "实时抢购" on a Chinese page
//   _("%(count)s holders", {count: 3})      // placeholders as in Python: %(name)s
//   ngettext("%(num)s order", "%(num)s orders", n, {num: n})
//   const LABELS = {held: i18n.N_("held")}; // mark now, _(LABELS.held) when shown
//
// Until the catalog arrives, and for any message it lacks, _() returns the English.
(function () {
  "use strict";

  const root = document.documentElement;
  let messages = {};
  let plurals = {};
  let nplurals = 2;

  function format(text, values) {
    if (!values) return text;
    return text.replace(/%\((\w+)\)[sdr]/g, (whole, name) =>
      Object.prototype.hasOwnProperty.call(values, name) ? String(values[name]) : whole);
  }

  function _(msgid, values) {
    return format(messages[msgid] || msgid, values);
  }

  function ngettext(singular, plural, n, values) {
    const forms = plurals[singular];
    // The two plural rules the catalog's languages use: Chinese has one form,
    // English (and the fallback) two.
    const index = nplurals === 1 ? 0 : (n === 1 ? 0 : 1);
    const text = forms && forms[index] ? forms[index] : (n === 1 ? singular : plural);
    return format(text, values);
  }

  const url = root.dataset.i18nCatalog;
  const ready = !url ? Promise.resolve() : fetch(url)
    .then((response) => (response.ok ? response.json() : null))
    .then((catalog) => {
      if (!catalog) return;
      messages = catalog.messages || {};
      plurals = catalog.plurals || {};
      nplurals = catalog.nplurals || 2;
    })
    .catch(() => { /* no catalog: the page stays in English */ });

  window.i18n = {
    ready,
    language: (root.lang || "en").replace("-", "_"),
    _,
    gettext: _,
    ngettext,
    N_: (msgid) => msgid,
    format,
  };
})();
