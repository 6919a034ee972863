// Subject suggestions from the graph store's labels, and a cloze that clears the relation.
(function () {
  const subject = document.getElementById("subject");
  const list = document.getElementById("subject-suggestions");
  const cloze = document.getElementById("cloze");
  const relation = document.getElementById("relation");
  if (subject && list) {
    let timer = null;
    subject.addEventListener("input", function () {
      clearTimeout(timer);
      const prefix = subject.value;
      if (prefix.trim().length < 2) return;
      timer = setTimeout(async function () {
        const answer = await fetch("/api/suggest?" + new URLSearchParams({ prefix: prefix, limit: "10" }));
        if (!answer.ok) return;
        const data = await answer.json();
        list.replaceChildren(...data.labels.map(function (label) {
          const option = document.createElement("option");
          option.value = label;  // set as a property: never parsed as HTML
          return option;
        }));
      }, 150);
    });
  }
  if (cloze && relation && subject) {
    document.getElementById("ask").addEventListener("submit", function () {
      if (cloze.value.trim()) { relation.value = ""; subject.value = ""; }
      else { cloze.disabled = true; }
    });
  }
})();
