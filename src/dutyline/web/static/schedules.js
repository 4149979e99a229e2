// The copy button beside a read-only address (schedules/calendar.html): shown only when the
// browser can copy; without JavaScript the address is selected and copied by hand.
document.addEventListener("DOMContentLoaded", () => {
  for (const button of document.querySelectorAll("button[data-copy]")) {
    const field = document.getElementById(button.dataset.copy);
    const status = document.getElementById("copy-status");
    if (!field || !navigator.clipboard) continue;
    button.hidden = false;
    button.addEventListener("click", async () => {
      field.select();
      try {
        await navigator.clipboard.writeText(field.value);
        if (status) status.textContent = status.dataset.copied || "Copied.";
      } catch (_) {
        if (status) status.textContent = "";
      }
    });
  }
});
