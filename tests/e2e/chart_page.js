'use strict';
// Opens a page agent_chart_html() wrote in headless Chromium (Debian's
// /usr/bin/chromium, driven by playwright-core), waits for the chart to be
// drawn, keeps a screenshot, and prints what was drawn as JSON: the bars
// (SVG rects of the bar marks), the points (symbols), the lines, the axis
// titles, every request the page made that was not for itself (`requests`;
// those its Content-Security-Policy refused before they left are `blocked`
// instead), and what it wrote to its console (where a refusal is reported). With --click, the first mark is then clicked (a mark with an href
// would follow it), and the page is watched for a request a while longer.
//
//   node chart_page.js page.html screenshot.png [--click]   (NODE_PATH: node_modules)
const path = require('path');
const { chromium } = require('playwright-core');

async function main() {
  const [page_path, screenshot, ...options] = process.argv.slice(2);
  const browser = await chromium.launch({
    executablePath: process.env.QP_CHROMIUM || '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
           '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  try {
    const page = await browser.newPage({ viewport: { width: 900, height: 600 } });
    const url = 'file://' + path.resolve(page_path);
    // The context's requests (a page a link opened is watched too): each
    // one the page made that was not for itself, and of them, those its
    // Content-Security-Policy refused before they left.
    const requests = [];
    const blocked = [];
    const pending = new Set();
    const context = page.context();
    context.on('request', (r) => {
      if (r.url() !== url && !r.url().startsWith('data:')) {
        requests.push(r);
        pending.add(r);
      }
    });
    context.on('requestfinished', (r) => pending.delete(r));
    context.on('requestfailed', (r) => {
      pending.delete(r);
      if (/csp/i.test((r.failure() || {}).errorText || '')) blocked.push(r);
    });
    const errors = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    const messages = [];
    page.on('console', (m) => messages.push(m.type() + ': ' + m.text()));
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
    if (options.includes('--click') && drawn.rendered === 'yes') {
      // A followed link is a request made within milliseconds of the click;
      // five seconds is many times that.
      const mark = page.locator('.role-mark path').first();
      if (await mark.count() > 0) {
        await mark.click({ force: true });
        await context.waitForEvent('request', { timeout: 5000 }).catch(() => {});
      }
    }
    // Each request ends (finished, or failed: refused by the policy, or not
    // answered) before it is reported.
    for (let waited = 0; pending.size > 0 && waited < 30000; waited += 50) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    drawn.requests = requests.filter((r) => !blocked.includes(r)).map((r) => r.url());
    drawn.blocked = blocked.map((r) => r.url());
    drawn.errors = errors;
    drawn.console = messages;
    process.stdout.write(JSON.stringify(drawn) + '\n');
  } finally {
    await browser.close();
  }
}

main().catch((e) => { process.stderr.write(String(e && e.stack || e) + '\n'); process.exit(1); });
