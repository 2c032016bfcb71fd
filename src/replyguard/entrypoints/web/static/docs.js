// Swagger UI for /docs, from files we serve ourselves (never a CDN).
"use strict";
window.addEventListener("load", () => {
  window.ui = window.SwaggerUIBundle({ url: "/openapi.json", dom_id: "#swagger-ui", deepLinking: true });
});
