// Starts Swagger UI (the swagger-ui-py package's build, served by this service under /docs/) on this
// service's own OpenAPI document. Nothing is fetched from another host: no validator badge, no remote spec.
"use strict";

window.ui = SwaggerUIBundle({
  url: "/openapi.json",
  dom_id: "#swagger-ui",
  deepLinking: true,
  validatorUrl: null,
  displayRequestDuration: true,
  onComplete: function () {
    document.body.dataset.ready = "true";
  },
});
