'use strict';
// Opens a page agent_chart_html() wrote in headless Chromium (Debian's
// /usr/bin/chromium, driven by playwright-core), waits for the chart to be
// drawn, keeps a screenshot, and prints what was drawn as JSON: the bars
// (SVG rects of the bar marks), the points (symbols), the lines, the axis
// titles, and every request the page made that was not for itself.
//
//   node chart_page.js page.html screenshot.png   (NODE_PATH: node_modules)
const path = require('path');
const { chromium } = require('playwright-core');

async function main() {
  const [page_path, screenshot] = process.argv.slice(2);
  const browser = await chromium.launch({
    executablePath: process.env.QP_CHROMIUM || '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
           '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  try {
    const page = await browser.newPage({ viewport: { width: 900, height: 600 } });
    const url = 'file://' + path.resolve(page_path);
    const requests = [];
    page.on('request', (r) => { if (r.url() !== url && !r.url().startsWith('data:')) requests.push(r.url()); });
    const errors = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    await page.goto(url);
    await page.waitForSelector('body[data-rendered]', { timeout: 60000 });
    const drawn = await page.evaluate(() => ({
      rendered: document.body.getAttribute('data-rendered'),
      text: document.getElementById('chart').textContent.slice(0, 500),
      bars: document.querySelectorAll('.mark-rect.role-mark path').length,
      points: document.querySelectorAll('.mark-symbol.role-mark path').length,
      lines: document.querySelectorAll('.mark-line.role-mark path').length,
      axis_titles: Array.from(document.querySelectorAll('.role-axis-title text')).map((t) => t.textContent),
      title: Array.from(document.querySelectorAll('.role-title-text text')).map((t) => t.textContent).join(' '),
    }));
    await page.screenshot({ path: screenshot, fullPage: true });
    drawn.requests = requests;
    drawn.errors = errors;
    process.stdout.write(JSON.stringify(drawn) + '\n');
  } finally {
    await browser.close();
  }
}

main().catch((e) => { process.stderr.write(String(e && e.stack || e) + '\n'); process.exit(1); });
