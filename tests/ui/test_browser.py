"""`durable ui` in a real browser (docs/reference/ui.md §16.10): Debian's chromium and chromium-driver driven by
selenium, headless, found as a person finds things (headings, link and button texts, labels). One browser for
the module. Without chromium, chromium-driver or selenium the tests skip, unless DURABLE_CI=1."""

import json
import os
import time

import pytest

from tests.ui.server import UI
from tests.waiting import wait_until

CHROMIUM, DRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"


def _need(ok, what):
    if not ok:
        if os.environ.get("DURABLE_CI") == "1":
            pytest.fail(f"{what} must be installed for the browser tests")
        pytest.skip(f"{what} is not installed (apt-get install chromium chromium-driver; pip install selenium)")


@pytest.fixture(scope="module")
def browser():
    try:
        import selenium
    except ImportError:
        selenium = None
    _need(selenium is not None, "selenium")
    _need(os.path.exists(CHROMIUM) and os.path.exists(DRIVER), "chromium and chromium-driver")
    pytest.importorskip("starlette", reason="the ui extra is not installed")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    os.environ["SE_OFFLINE"] = "true"  # selenium manager never fetches a browser or a driver
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1280,900",
                "--no-first-run", "--disable-extensions", "--disable-background-networking"):
        options.add_argument(arg)
    driver = webdriver.Chrome(options=options, service=Service(executable_path=DRIVER))
    driver.set_page_load_timeout(30)
    yield driver
    driver.quit()


@pytest.fixture(scope="module")
def ui(tmp_path_factory, browser):
    server = UI(tmp_path_factory.mktemp("ui-browser"))
    server.cli("session", "create", "fix-login", "--title", "Fix the login page")
    rows = [{"role": "user", "content": "The login page loops."},
            {"role": "assistant", "content": "", "tool_calls": [{"id": "call_1", "name": "read_file", "arguments": '{"path": "login.py"}'}]},
            {"role": "tool", "content": "\n".join(f"{i:3} line of login.py" for i in range(40)), "call_id": "call_1", "name": "read_file"},
            {"role": "assistant", "content": "The redirect target is the login page itself; I will fix it.",
             "meta": {"model": "gpt-4.1", "usage": {"input_tokens": 900, "output_tokens": 40}, "cost_usd": 0.01}}]
    server.cli("transcript", "append", "fix-login", "--batch", "-", input="\n".join(json.dumps(r) for r in rows))
    server.cli("elicit", "ask", "fix-login", "--prompt", "Deploy the fix to production?", "--choice", "yes", "--choice", "no")
    server.cli("memory", "set", "timezone", "Europe/Paris", "--source", "model")
    browser.get(server.line["url"])
    yield server
    server.stop()


def by_text(driver, how, text):
    from selenium.webdriver.common.by import By

    return driver.find_element(By.XPATH, f"//{how}[normalize-space(.)={json.dumps(text)}]")


def test_a_person_answers_a_question_and_confirms_a_fact(browser, ui):
    from selenium.webdriver.common.by import By

    browser.get(f"http://127.0.0.1:{ui.port}/")
    assert browser.find_element(By.TAG_NAME, "h1").text == "Sessions"
    assert "1 question waiting" in browser.page_source
    by_text(browser, "a", "fix-login").click()
    assert browser.find_element(By.TAG_NAME, "h1").text == "fix-login"
    assert [h.text for h in browser.find_elements(By.TAG_NAME, "h2")] == ["Questions", "Transcript", "Queue", "Events"]
    browser.find_element(By.XPATH, "//label[normalize-space(.)='yes']").click()
    browser.find_element(By.XPATH, "//label[normalize-space(.)='Comment']/following::input[1]").send_keys("after 5pm")
    by_text(browser, "button", "Send answer").click()
    wait_until(lambda: "No questions waiting" in browser.page_source, "the answered question to leave its form", timeout=10)
    answered = ui.cli("elicit", "list", "fix-login", "--json").json()[0]
    assert (answered["status"], answered["answer"], answered["comment"]) == ("answered", "yes", "after 5pm")
    by_text(browser, "a", "Memory").click()
    browser.find_element(By.XPATH, "//button[@aria-label='Confirm timezone']").click()
    wait_until(lambda: not browser.find_elements(By.XPATH, "//button[@aria-label='Confirm timezone']"), "the Confirm button to go")
    assert ui.cli("memory", "get", "timezone", "--json").json()["confirmed"] is True


def test_a_new_row_and_a_new_question_appear_without_a_reload(browser, ui):
    from selenium.webdriver.common.by import By

    browser.get(f"http://127.0.0.1:{ui.port}/session?name=fix-login")
    browser.execute_script("window.scrollTo(0, 200); window.notReloaded = true;")
    time.sleep(0.8)  # the page's stream is open and the poller has seen the index as it is
    seq = ui.cli("transcript", "append", "fix-login", "--role", "user", "Any news?", "--json").json()["seq"]
    ui.cli("elicit", "ask", "fix-login", "--prompt", "Roll back if it fails?", "--choice", "yes", "--choice", "no")
    started = time.monotonic()
    wait_until(lambda: browser.find_elements(By.ID, f"row-{seq}"), "the new row to appear", timeout=15, step=0.05)
    wait_until(lambda: "Roll back if it fails?" in browser.page_source, "the new question", timeout=15, step=0.05)
    took = time.monotonic() - started
    assert browser.execute_script("return window.notReloaded === true && window.scrollY") == 200
    assert took < 5, f"the row took {took:.1f}s to show (2 s on an unloaded machine)"


def test_pages_fit_a_phone_and_keyboard_reaches_the_skip_link(browser, ui, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    shots = os.environ.get("DURABLE_UI_SCREENSHOTS") or str(tmp_path)
    pages = {"list": "/", "session": "/session?name=fix-login", "usage": "/usage", "memory": "/memory", "search": "/search?q=login"}
    for width in (1280, 390):
        browser.set_window_size(width, 900)
        for name, path in pages.items():
            browser.get(f"http://127.0.0.1:{ui.port}{path}")
            assert browser.find_elements(By.CSS_SELECTOR, 'nav[aria-label="Main"]')
            fits = browser.execute_script("return document.documentElement.scrollWidth <= window.innerWidth")
            assert fits, f"{path} scrolls sideways at {width} px"
            browser.save_screenshot(os.path.join(shots, f"ui-{name}-{width}.png"))
    browser.set_window_size(1280, 900)
    browser.get(f"http://127.0.0.1:{ui.port}/usage")
    assert len(browser.find_elements(By.CSS_SELECTOR, 'svg[role="img"]')) == 2
    browser.find_element(By.TAG_NAME, "body").send_keys(Keys.TAB)
    assert browser.switch_to.active_element.text == "Skip to content"
    assert all(os.path.getsize(os.path.join(shots, f)) > 1000 for f in os.listdir(shots) if f.startswith("ui-"))
    if os.environ.get("DURABLE_UI_SCREENSHOTS"):  # the README's picture: the whole session page
        browser.set_window_size(1100, 1700)
        browser.get(f"http://127.0.0.1:{ui.port}/session?name=fix-login")
        browser.save_screenshot(os.path.join(shots, "ui-session.png"))
        browser.set_window_size(1280, 900)
