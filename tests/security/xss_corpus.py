"""Fifty stored-XSS payloads (classic filter-evasion forms: tags, attributes, URLs, SVG/MathML, template and
markup-breaking strings). Each would open a dialog or add an element with an inline handler if a page parsed it
as HTML; every one is short enough for a concept name (200 characters)."""

from __future__ import annotations

PAYLOADS: list[str] = [
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(2)>",
    '<img src="x" onerror="alert(3)">',
    "<svg onload=alert(4)>",
    "<svg><script>alert(5)</script></svg>",
    "<body onload=alert(6)>",
    "<iframe src=javascript:alert(7)></iframe>",
    '<a href="javascript:alert(8)">click</a>',
    "<details open ontoggle=alert(9)>",
    "<input autofocus onfocus=alert(10)>",
    "<video><source onerror=alert(11)></video>",
    "<audio src=x onerror=alert(12)>",
    "<marquee onstart=alert(13)>x</marquee>",
    "<object data=javascript:alert(14)>",
    "<embed src=javascript:alert(15)>",
    '"><script>alert(16)</script>',
    "'><img src=x onerror=alert(17)>",
    "</h1><img src=x onerror=alert(18)>",
    "</kbd></button><img src=x onerror=alert(19)>",
    "<ScRiPt>alert(20)</sCrIpT>",
    "<img src=x oNeRrOr=alert(21)>",
    "<img/src=x/onerror=alert(22)>",
    "<img src=x onerror=&#97;lert(23)>",
    '<img src=x onerror="&#x61;lert(24)">',
    "<svg><animate onbegin=alert(25) attributeName=x dur=1s>",
    "<math><mtext><img src=x onerror=alert(26)></mtext></math>",
    "<style>@import 'x';</style><img src=x onerror=alert(27)>",
    "<link rel=import href=x onload=alert(28)>",
    "<form><button formaction=javascript:alert(29)>x</button></form>",
    "<isindex type=image src=x onerror=alert(30)>",
    "<textarea></textarea><img src=x onerror=alert(31)>",
    '<noscript><p title="</noscript><img src=x onerror=alert(32)>">',
    "<template><img src=x onerror=alert(33)></template>",
    '<div style="background:url(javascript:alert(34))">x</div>',
    "<base href=javascript:alert(35)//>",
    '<meta http-equiv=refresh content="0;url=javascript:alert(36)">',
    "${alert(37)}",
    "{{constructor.constructor('alert(38)')()}}",
    "javascript:alert(39)",
    "<img src=`x` onerror=alert(40)>",
    "<svg><a xlink:href=javascript:alert(41)><text y=20>x</text></a></svg>",
    "<img src=x onerror=alert&lpar;42&rpar;>",
    "<scr<script>ipt>alert(43)</scr</script>ipt>",
    "<select autofocus onfocus=alert(44)>",
    "<keygen autofocus onfocus=alert(45)>",
    "<img src=x:alert(46) onerror=eval(src)>",
    "<svg/onload=alert(47)//",
    "\u003cimg src=x onerror=alert(48)\u003e",
    "<table background=javascript:alert(49)>",
    '<!--<img src="--><img src=x onerror=alert(50)//">',
]

assert len(PAYLOADS) == 50 and all(len(p) <= 150 for p in PAYLOADS)

# Run in the page: elements that a parsed payload would have created (inline handlers, javascript: URLs, script,
# frames, plugins, base/meta/form) inside `root`; empty when every payload stayed text. `own` lists selectors of
# the page's own markup whose tag alone would count (the worker page's `<form method="dialog">` closing its
# shortcut list): each is passed over only while it matches exactly one element, so a payload that copies it makes
# both count; its attributes are checked like every other element's.
INJECTED_ELEMENTS_JS = """
([root, own]) => {
  const scope = document.querySelector(root) || document.body;
  const mine = new Set();
  for (const selector of own) {
    const matches = document.querySelectorAll(selector);
    if (matches.length === 1) mine.add(matches[0]);
  }
  const found = [];
  for (const el of scope.querySelectorAll('*')) {
    for (const attr of el.attributes) {
      if (attr.name.toLowerCase().startsWith('on') || /^\\s*javascript:/i.test(attr.value)) {
        found.push(el.outerHTML.slice(0, 120));
      }
    }
    if (['SCRIPT', 'IFRAME', 'OBJECT', 'EMBED', 'BASE', 'META', 'FORM', 'TEMPLATE', 'MATH', 'NOSCRIPT']
        .includes(el.tagName.toUpperCase()) && !mine.has(el)) {
      found.push(el.tagName);
    }
  }
  return found;
}
"""
