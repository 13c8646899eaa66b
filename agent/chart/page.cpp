// The chart's page: where vega's scripts are found (the setting, the npm
// package beside the extension, Debian's folders) and the offline page that
// inlines them under a Content-Security-Policy that forbids every fetch.
#include <dlfcn.h>
#include <fmt/format.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "agent/base/text.h"
#include "agent/chart/chart.h"
#include "agent/chart/chart_schema.h"

namespace querypilot {

std::vector<std::string> ChartScriptFolders(const std::string& setting,
                                            const std::string& extension_dir) {
  if (!setting.empty()) return {setting};
  std::vector<std::string> out;
  if (!extension_dir.empty()) {
    // The npm package: node_modules/querypilot/lib/querypilot.so, its
    // dependencies in node_modules/querypilot/node_modules or, hoisted, in
    // node_modules itself.
    out.push_back(extension_dir + "/../node_modules");
    out.push_back(extension_dir + "/../..");
    out.push_back(extension_dir + "/node_modules");
  }
  out.push_back("node_modules");
  out.push_back("/usr/local/lib/node_modules");
  out.push_back("/usr/lib/node_modules");
  out.push_back("/usr/share/nodejs");
  return out;
}

Result<ChartScripts> FindChartScripts(const std::vector<std::string>& folders) {
  for (const std::string& folder : folders) {
    ChartScripts scripts;
    scripts.folder = folder;
    auto vega = ReadWholeFile(folder + "/vega/build/vega.min.js");
    auto lite = ReadWholeFile(folder + "/vega-lite/build/vega-lite.min.js");
    auto embed = ReadWholeFile(folder + "/vega-embed/build/vega-embed.min.js");
    if (!vega || !lite || !embed) continue;
    scripts.vega = std::move(*vega);
    scripts.vega_lite = std::move(*lite);
    scripts.vega_embed = std::move(*embed);
    return scripts;
  }
  return Status(ErrorKind::kNotConfigured,
                fmt::format("the Vega scripts are not installed: run `npm install vega@5 "
                            "vega-lite@5 vega-embed@6` and set agent_config('chart_scripts', "
                            "'/path/to/node_modules') (or QUERYPILOT_CHART_SCRIPTS); looked in {}",
                            fmt::join(folders, ", ")));
}

std::string ExtensionDir() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&ExtensionDir), &info) == 0 || !info.dli_fname) return "";
  std::string path = info.dli_fname;
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

namespace {

// Script text that cannot end its <script> element early.
std::string ScriptText(std::string_view js) {
  std::string out;
  out.reserve(js.size());
  for (size_t i = 0; i < js.size(); ++i) {
    if (js[i] == '<' && i + 1 < js.size() && js[i + 1] == '/' &&
        text::Lower(js.substr(i + 2, 6)) == "script") {
      out += "<\\/";
      ++i;
      continue;
    }
    out += js[i];
  }
  return out;
}

// The page's Content-Security-Policy: it fetches nothing, whatever its spec
// says. Its scripts and styles are inline (vega-embed adds a <style>, Vega
// styles its marks); images only from data: URLs. Vega's expressions are
// interpreted (vega-embed's `ast`), never compiled with Function(), so
// 'unsafe-eval' is not needed.
constexpr std::string_view kChartPagePolicy =
    "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:; "
    "base-uri 'none'; form-action 'none'";

}  // namespace

std::string ChartHtml(std::string_view spec, const ChartScripts& scripts, std::string_view title) {
  // JSON holds '<' only inside strings, where \u003c reads the same.
  std::string safe_spec;
  for (char c : spec) {
    if (c == '<') {
      safe_spec += "\\u003c";
    } else {
      safe_spec += c;
    }
  }
  std::string page;
  page.reserve(scripts.vega.size() + scripts.vega_lite.size() + scripts.vega_embed.size() +
               safe_spec.size() + 1024);
  page += "<!DOCTYPE html>\n<html>\n<head>\n<meta charset=\"utf-8\">\n<meta http-equiv=\"";
  page += "Content-Security-Policy\" content=\"";
  page += kChartPagePolicy;
  page += "\">\n<title>";
  page += text::EscapeMarkup(text::ToValidUtf8(title));
  page += "</title>\n<script>";
  page += ScriptText(scripts.vega);
  page += "</script>\n<script>";
  page += ScriptText(scripts.vega_lite);
  page += "</script>\n<script>";
  page += ScriptText(scripts.vega_embed);
  page +=
      "</script>\n</head>\n<body>\n<div id=\"chart\"></div>\n<script>\n"
      "var spec = ";
  page += safe_spec;
  page +=
      ";\n"
      "var refuse = function () {\n"
      "  return Promise.reject(new Error('this page loads nothing'));\n"
      "};\n"
      "var loader = vega.loader();\n"
      "loader.load = loader.sanitize = loader.http = loader.file = refuse;\n"
      "vegaEmbed('#chart', spec, {mode: 'vega-lite', renderer: 'svg', actions: false, ast: true,\n"
      "                           loader: loader}).then(function () {\n"
      "  document.body.setAttribute('data-rendered', 'yes');\n"
      "}).catch(function (e) {\n"
      "  document.getElementById('chart').textContent = String(e);\n"
      "  document.body.setAttribute('data-rendered', 'error');\n"
      "});\n"
      "</script>\n</body>\n</html>\n";
  return page;
}

}  // namespace querypilot
