// A scheduling link's page: show the times in the browser's time zone when the address names
// none (without this script, the page shows the calendar's zone and the form changes it).
(function () {
  var select = document.getElementById("tz");
  if (!select || select.getAttribute("data-given") === "yes") return;
  var zone;
  try { zone = Intl.DateTimeFormat().resolvedOptions().timeZone; } catch (e) { return; }
  if (!zone || zone === select.value) return;
  for (var i = 0; i < select.options.length; i++) {
    if (select.options[i].value === zone) {
      var url = new URL(window.location.href);
      url.searchParams.set("timeZone", zone);
      window.location.replace(url.toString());
      return;
    }
  }
})();
