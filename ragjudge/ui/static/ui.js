// ragjudge ui: keyboard navigation on the Label page (no inline script: the CSP forbids it).
// a digit picks that value for the focused dimension (yes/no: 1 / y = yes, 0 / n = no;
// graded: 1 to 5), then the next one is focused; Enter saves and goes to the next case.
document.addEventListener("keydown", (event) => {
  const form = document.getElementById("label-form");
  const tag = event.target.tagName;
  if (!form || tag === "TEXTAREA" || tag === "INPUT" || tag === "SELECT") return;
  const rows = Array.from(form.querySelectorAll("fieldset.dimension"));
  if (!rows.length) return;
  let current = rows.findIndex((r) => r.classList.contains("current"));
  if (current < 0) current = 0;
  const pick = (value) => {
    const input = rows[current].querySelector(`input[value="${value}"]`);
    if (input) input.checked = true;
    rows[current].classList.remove("current");
    current = Math.min(current + 1, rows.length - 1);
    rows[current].classList.add("current");
  };
  const value = { y: "1", n: "0" }[event.key] || event.key;
  if (/^[0-9]$/.test(value) && rows[current].querySelector(`input[value="${value}"]`)) pick(value);
  else if (event.key === "Enter") form.requestSubmit();
  else return;
  event.preventDefault();
});
