"""Browser tests of the web console (/console/) in headless Chromium driven by Selenium, against a real
gateway + matcher (harness.Stack) seeded through the public API. Screenshots go to .run/test/artifacts/console/."""

import json
import os
import shutil
import sys
import time
import unittest
import urllib.parse

os.environ.setdefault("SE_OFFLINE", "true")  # Selenium must never fetch a driver or a browser: both come from Debian.
os.environ.setdefault("SE_AVOID_STATS", "true")

from selenium import webdriver  # noqa: E402
from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException, TimeoutException  # noqa: E402
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.action_chains import ActionChains  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402
from selenium.webdriver.support.ui import Select, WebDriverWait  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402

CHROMIUM = os.environ.get("FACEGATE_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("FACEGATE_CHROMEDRIVER", "/usr/bin/chromedriver")
ARTIFACTS = os.path.join(harness.ROOT, ".run", "test", "artifacts", "console")
DOWNLOADS = os.path.join(harness.ROOT, ".run", "test", "console", "downloads")
LOCAL_HOSTS = {"127.0.0.1", "localhost", "[::1]", "::1"}

stack = None
seed = {}
drivers = []
browser_errors = []  # SEVERE console entries of every page
requested_urls = []  # every URL any page asked the network for


def make_driver(extra_arguments=()):
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                     "--disable-background-networking", "--disable-component-update", "--disable-sync",
                     "--disable-default-apps", "--no-default-browser-check", "--disable-domain-reliability",
                     "--disable-features=Translate,OptimizationHints,MediaRouter,AutofillServerCommunication",
                     "--window-size=1280,900", f"--user-data-dir={harness.new_user_data_dir()}", *extra_arguments]:
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    options.add_experimental_option("prefs", {"download.default_directory": DOWNLOADS, "download.prompt_for_download": False})
    service = Service(executable_path=CHROMEDRIVER, log_output=os.path.join(stack.state, "chromedriver.log"))
    driver = webdriver.Chrome(service=service, options=options)
    driver.execute_cdp_cmd("Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": DOWNLOADS})
    drivers.append(driver)
    return driver


def drain_logs(driver):
    for entry in driver.get_log("browser"):
        if entry.get("level") == "SEVERE":
            browser_errors.append(entry["message"])
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message.get("method") == "Network.requestWillBeSent":
            requested_urls.append(message["params"]["request"]["url"])


def setUpModule():
    global stack
    os.makedirs(ARTIFACTS, exist_ok=True)
    shutil.rmtree(DOWNLOADS, ignore_errors=True)
    os.makedirs(DOWNLOADS, exist_ok=True)
    stack = harness.Stack(ARTIFACTS)
    try:
        stack.start()
        seed_data()
    except BaseException:
        stack.stop()
        raise


def tearDownModule():
    for driver in drivers:
        try:
            driver.quit()
        except Exception:
            pass
    if stack:
        undeclared = stack.undeclared_refusals()
        stack.stop()
        if undeclared:
            raise AssertionError(f"refusals their routes do not declare: {undeclared}")


def seed_data():
    """An app with two users, Obama enrolled (obama2.jpg), face logins that succeed and fail on several devices, an auditor.
    The kiosk module is formal, so the kiosk page's login and onboarding are not limited by trial quotas."""
    app = stack.admin("POST", "/v1/apps", {"name": "Console test app", "deviceBinding": "header", "modules": {"faceLogin": "formal", "ctid": "disabled",
                                                                                     "kiosk": "formal", "deviceAuth": "disabled"}})
    assert app.status == 201, app.body
    assert app.json()["modules"]["kiosk"] == "formal", app.body
    seed["app"] = app.json()
    app_id = seed["app"]["appId"]
    users = {}
    for number, name in (("E1001", "Barack Obama"), ("E1002", "Joe Biden")):
        created = stack.admin("POST", f"/v1/apps/{app_id}/users", {"employeeNumber": number, "name": name})
        assert created.status == 201, created.body
        users[number] = created.json()["userId"]
    seed["users"] = users
    enrolled = stack.admin("POST", f"/v1/apps/{app_id}/users/{users['E1001']}/faces", body=stack.image("obama2.jpg"), content_type="image/jpeg")
    assert enrolled.status == 201, enrolled.body
    seed["enrolled"] = enrolled.json()
    token = stack.call("POST", "/v1/access-tokens", basic=f"{app_id}:{seed['app']['appSecret']}")
    assert token.status == 200, token.body
    seed["token"] = token.json()["accessToken"]
    for device, image in [("device-a", "obama2.jpg"), ("device-a", "obama3.jpg"), ("device-b", "biden.jpg"), ("device-b", "biden.jpg"),
                          ("device-b", "biden.jpg"), ("device-c", "biden.jpg"), ("device-d", "obama2.jpg"), ("device-d", "obama3.jpg"),
                          ("device-a", "obama2.jpg")]:
        answer = stack.face_login(seed["token"], device, image)
        assert answer.status in (200, 422), (answer.status, answer.body)
        if answer.status == 200 and answer.json()["status"] == "CONFIRM_REQUIRED":
            # A new device for this user: the employee number binds it, later logins from it succeed at once.
            confirmed = stack.call("POST", "/v1/face-login/confirm", bearer=seed["token"], headers={"X-Device-Id": device},
                                   json_body={"confirmationId": answer.json()["confirmationId"], "employeeNumber": "E1001"})
            assert confirmed.status == 200, confirmed.body
    locked = stack.face_login(seed["token"], "device-b", "biden.jpg")
    assert locked.status == 423, (locked.status, locked.body)  # three failures lock device-b (FACEGATE_LOCK_AFTER=3)
    auditor = stack.admin("POST", "/v1/auditors", {"name": "Console auditor", "appIds": [app_id]})
    assert auditor.status == 201, auditor.body
    seed["auditorKey"] = auditor.json()["auditorKey"]


def api_items(**filters):
    """Every transaction the API returns for a filter (the oracle the console is checked against)."""
    items, cursor = [], None
    while True:
        params = dict(filters, limit=1000)
        if cursor:
            params["cursor"] = cursor
        page = stack.admin("GET", "/v1/audit/transactions?" + urllib.parse.urlencode(params)).json()
        items += page["items"]
        cursor = page.get("nextCursor")
        if not cursor:
            return items


class ConsoleTests(unittest.TestCase):
    driver = None

    @classmethod
    def setUpClass(cls):
        cls.driver = make_driver()

    def tearDown(self):
        drain_logs(self.driver)

    # --- helpers -------------------------------------------------------------------------------------------------
    def wait(self, condition, timeout=20, message=""):
        return WebDriverWait(self.driver, timeout).until(condition, message)

    def by_id(self, element_id):
        return self.driver.find_element(By.ID, element_id)

    def visible(self, element_id):
        return self.wait(lambda d: d.find_element(By.ID, element_id).is_displayed() and d.find_element(By.ID, element_id), message=element_id)

    def sign_in(self, key, view="auditor"):
        self.driver.get(stack.url + "/console/")
        if self.by_id("who").is_displayed():
            self.by_id("signout").click()
        field = self.visible("signin-key")
        field.clear()
        field.send_keys(key)
        self.by_id("signin-submit").click()
        self.visible("who")
        if view == "operator":
            self.by_id("nav-operator").click()
            self.visible("operator-view")
        else:
            self.visible("auditor-view")
            self.wait_rows()

    def wait_rows(self):
        # Text and class read together: a signed-out console clears the status, so "fetched" is this session's.
        def settled(driver):
            status = driver.find_element(By.ID, "audit-status")
            text, classes = status.text, status.get_attribute("class")
            return (text, classes) if ("fetched" in text and "ok" in classes) or "bad" in classes else None
        text, classes = self.wait(settled, message="audit rows")
        self.assertIn("ok", classes, text)

    def rows(self):
        return self.driver.find_elements(By.CSS_SELECTOR, "#audit-rows tr[data-transaction-id]")

    def search(self, **fields):
        form = {"appId": "f-app", "kind": "f-kind", "outcome": "f-outcome", "userId": "f-user", "deviceId": "f-device"}
        for name, element_id in form.items():
            field = self.by_id(element_id)
            field.clear()
            if fields.get(name):
                field.send_keys(fields[name])
        Select(self.by_id("f-limit")).select_by_value(str(fields.get("limit", 50)))
        self.driver.execute_script("document.getElementById('audit-status').textContent = ''")
        self.by_id("audit-search").click()
        self.wait_rows()

    def screenshot(self, name):
        self.driver.save_screenshot(os.path.join(ARTIFACTS, name))

    def click(self, css):
        """Clicks the element `css` selects, again if a re-render replaced it meanwhile."""
        def attempt(driver):
            try:
                driver.find_element(By.CSS_SELECTOR, css).click()
                return True
            except (StaleElementReferenceException, NoSuchElementException):
                return False
        self.wait(attempt, message=css)

    def open_seeded_app(self):
        self.sign_in(stack.admin_key, view="operator")
        row = f"#apps-rows tr[data-app-id='{seed['app']['appId']}']"
        # The seeded app is in header mode: the console says what that means.
        note = self.wait(lambda d: d.execute_script("return document.querySelector(arguments[0])?.textContent", f"{row} p[data-binding='header']"))
        self.assertIn("X-Device-Id", note)
        self.click(f"{row} button")
        self.visible("app-detail")
        self.wait(lambda d: d.find_elements(By.CSS_SELECTOR, f"#users-rows tr[data-user-id='{seed['users']['E1001']}']"))

    # --- serving ---------------------------------------------------------------------------------------------------
    def test_00_serves_the_console_with_strict_headers(self):
        redirect = harness.request("GET", stack.url + "/console")
        self.assertEqual(redirect.status, 301)
        self.assertEqual(redirect.headers["Location"], "/console/")
        page = harness.request("GET", stack.url + "/console/")
        self.assertEqual(page.status, 200)
        self.assertTrue(page.headers["Content-Type"].startswith("text/html"))
        csp = page.headers["Content-Security-Policy"]
        for directive in ("default-src 'none'", "script-src 'self'", "style-src 'self'", "connect-src 'self'", "frame-ancestors 'none'"):
            self.assertIn(directive, csp)
        self.assertNotIn("unsafe-inline", csp)
        self.assertNotIn("http", csp)
        self.assertIn("camera=()", page.headers["Permissions-Policy"])
        self.assertEqual(page.headers["Cache-Control"], "no-cache")
        self.assertEqual(page.headers["X-Content-Type-Options"], "nosniff")
        kiosk = harness.request("GET", stack.url + "/console/kiosk.html")
        self.assertIn("camera=(self)", kiosk.headers["Permissions-Policy"])
        for name, content_type in (("app.js", "text/javascript"), ("console.css", "text/css"), ("favicon.svg", "image/svg+xml")):
            answer = harness.request("GET", f"{stack.url}/console/{name}")
            self.assertEqual(answer.status, 200, name)
            self.assertTrue(answer.headers["Content-Type"].startswith(content_type), answer.headers["Content-Type"])
        etag = page.headers["ETag"]
        self.assertEqual(harness.request("GET", stack.url + "/console/", headers={"If-None-Match": etag}).status, 304)
        for path in ("/console/..%2F..%2FPackage.swift", "/console/..%2fREADME.md", "/console/%2e%2e", "/console/.hidden",
                     "/console/..%5C..%5CPackage.swift", "/console/nothing.html", "/console/%2Fetc%2Fpasswd"):
            answer = harness.request("GET", stack.url + path)
            self.assertEqual(answer.status, 404, path)
            self.assertNotIn(b"swift-tools-version", answer.body)

    # --- sign-in ----------------------------------------------------------------------------------------------------
    def test_01_sign_in_rejects_a_wrong_key_and_accepts_the_operator_key(self):
        self.driver.get(stack.url + "/console")
        self.assertTrue(self.driver.current_url.endswith("/console/"))
        self.visible("signin-key").send_keys("fgk_not_a_key")
        self.by_id("signin-submit").click()
        self.wait(lambda d: "not accepted" in d.find_element(By.ID, "signin-status").text)
        self.assertFalse(self.by_id("auditor-view").is_displayed())
        self.screenshot("signin.png")
        self.sign_in(stack.admin_key)
        self.assertEqual(self.by_id("who-role").text, "operator")
        self.assertTrue(self.by_id("nav-operator").is_displayed())
        stored = self.driver.execute_script("return sessionStorage.getItem('facegate.console.session')")
        self.assertIn(stack.admin_key, stored)
        self.assertNotIn(stack.admin_key, self.driver.execute_script("return localStorage.length ? JSON.stringify(localStorage) : ''"))

    # --- auditor ----------------------------------------------------------------------------------------------------
    def test_02_auditor_search_filters_and_pages(self):
        app_id = seed["app"]["appId"]
        self.sign_in(seed["auditorKey"])
        self.assertEqual(self.by_id("who-role").text, "auditor")
        self.assertFalse(self.by_id("nav-operator").is_displayed())
        expected = api_items(appId=app_id)
        self.assertGreater(len(expected), 10)
        self.search(appId=app_id, limit=10)
        first_page = [row.get_attribute("data-transaction-id") for row in self.rows()]
        self.assertEqual(first_page, [item["transactionId"] for item in expected[:10]])
        self.assertTrue(self.by_id("audit-next").is_enabled())
        self.assertFalse(self.by_id("audit-prev").is_enabled())
        seen = list(first_page)
        while self.by_id("audit-next").is_enabled():
            self.by_id("audit-next").click()
            self.wait(lambda d: d.find_element(By.ID, "audit-page").text.startswith(f"Page {len(seen) // 10 + 1}"))
            seen += [row.get_attribute("data-transaction-id") for row in self.rows()]
        self.assertEqual(seen, [item["transactionId"] for item in expected])
        self.by_id("audit-prev").click()
        self.wait(lambda d: d.find_element(By.ID, "audit-page").text.startswith(f"Page {(len(seen) - 1) // 10}"))
        self.screenshot("auditor.png")

        failures = api_items(appId=app_id, outcome="NO_MATCH_FACE")
        self.assertGreaterEqual(len(failures), 3)
        self.search(appId=app_id, outcome="NO_MATCH_FACE")
        outcomes = [row.find_elements(By.TAG_NAME, "td")[3].text for row in self.rows()]
        self.assertEqual(len(outcomes), len(failures))
        self.assertEqual(set(outcomes), {"NO_MATCH_FACE"})
        self.search(appId=app_id, deviceId="device-b", kind="face.login")
        self.assertEqual(len(self.rows()), len(api_items(appId=app_id, deviceId="device-b", kind="face.login")))
        self.assertEqual(len(self.rows()), 4)

        # The time window (UTC inputs, as the table's times): from an hour ago everything, from tomorrow nothing.
        local = "document.getElementById('f-from').value = new Date(Date.now() + arguments[0] * 3600e3).toISOString().slice(0, 19);"
        self.driver.execute_script(local, -1)
        self.search(appId=app_id, limit=100)
        self.assertEqual(len(self.rows()), len(expected))
        self.driver.execute_script(local, 24)
        self.search(appId=app_id, limit=100)
        self.assertEqual(len(self.rows()), 0)
        self.assertIn("No transactions match", self.by_id("audit-rows").text)
        self.driver.execute_script("document.getElementById('f-from').value = ''")

    def test_03_detail_drawer_opens_and_closes_by_keyboard(self):
        self.sign_in(stack.admin_key)
        self.search(appId=seed["app"]["appId"], limit=10)
        row = self.rows()[0]
        button = row.find_element(By.TAG_NAME, "button")
        button.send_keys(Keys.ENTER)
        self.visible("drawer")
        self.assertEqual(self.driver.switch_to.active_element.get_attribute("id"), "drawer-close")
        fields = {dd.get_attribute("data-field"): dd.text for dd in self.driver.find_elements(By.CSS_SELECTOR, "#drawer-fields dd")}
        self.assertEqual(fields["transactionId"], row.get_attribute("data-transaction-id"))
        expected = next(item for item in api_items(appId=seed["app"]["appId"]) if item["transactionId"] == fields["transactionId"])
        self.assertEqual(fields["kind"], expected["kind"])
        self.assertEqual(fields["outcome"], expected["outcome"])
        self.assertEqual(fields["latencyMs"], str(expected["latencyMs"]))
        self.screenshot("auditor-drawer.png")
        ActionChains(self.driver).send_keys(Keys.ESCAPE).perform()
        self.wait(lambda d: not d.find_element(By.ID, "drawer").is_displayed())
        self.assertEqual(self.driver.switch_to.active_element, button)

    def test_04_csv_export_downloads_the_current_filter(self):
        self.sign_in(stack.admin_key)
        app_id = seed["app"]["appId"]
        self.search(appId=app_id, outcome="SUCCESS")
        target = os.path.join(DOWNLOADS, "transactions.csv")
        if os.path.exists(target):
            os.remove(target)
        self.by_id("audit-csv").click()
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not os.path.exists(target):
            time.sleep(0.2)
        self.assertTrue(os.path.exists(target), "transactions.csv was not downloaded")
        with open(target, encoding="utf-8") as handle:
            lines = handle.read().strip().splitlines()
        self.assertEqual(lines[0], "transactionId,appId,kind,outcome,userId,deviceId,clientIp,score,latencyMs,createdAt,actorType,actorId,change,detail")
        expected = api_items(appId=app_id, outcome="SUCCESS")
        self.assertEqual(len(lines) - 1, len(expected))
        self.assertEqual({line.split(",")[0] for line in lines[1:]}, {item["transactionId"] for item in expected})
        self.assertIn("CSV exported", self.by_id("audit-status").text)

    def test_05_chain_status_is_green_per_app(self):
        self.sign_in(stack.admin_key)
        app_id = seed["app"]["appId"]
        # Verified when asked, not at every sign-in: nothing is listed before the button.
        self.assertEqual(self.driver.find_elements(By.CSS_SELECTOR, "#chain-list li"), [])
        self.by_id("chain-refresh").click()
        item = self.wait(lambda d: d.find_element(By.CSS_SELECTOR, f"#chain-list li[data-app-id='{app_id}'][data-state]"))
        self.assertEqual(item.get_attribute("data-state"), "ok")
        self.assertIn("Console test app", item.text)
        self.assertIn("intact", item.text)
        # A saved checkpoint is checked by the next verification.
        self.by_id("chain-checkpoint").click()
        self.wait(lambda d: "Checkpoints saved" in d.find_element(By.ID, "audit-status").text)
        self.by_id("chain-refresh").click()
        item = self.wait(lambda d: d.find_element(By.CSS_SELECTOR, f"#chain-list li[data-app-id='{app_id}'][data-state]"))
        self.assertIn("holds", item.text)

    def test_06_charts_are_drawn_from_the_fetched_rows(self):
        self.sign_in(stack.admin_key)
        self.search(appId=seed["app"]["appId"], kind="face.login")
        for chart in ("chart-outcomes", "chart-success", "chart-latency", "chart-devices"):
            svg = self.by_id(chart).find_element(By.TAG_NAME, "svg")
            self.assertTrue(svg.get_attribute("aria-label"), chart)
        outcomes = {rect.get_attribute("data-outcome") for rect in self.driver.find_elements(By.CSS_SELECTOR, "#chart-outcomes rect[data-outcome]")}
        self.assertEqual(outcomes, {item["outcome"] for item in api_items(appId=seed["app"]["appId"], kind="face.login")})
        self.assertEqual(len(self.driver.find_elements(By.CSS_SELECTOR, "#chart-success polyline")), 1)
        # The success rate counts logins only, a confirmation request not among them.
        logins = [item for item in api_items(appId=seed["app"]["appId"], kind="face.login") if item["outcome"] != "CONFIRM_REQUIRED"]
        rate = self.by_id("chart-success").find_element(By.TAG_NAME, "svg").get_attribute("aria-label")
        self.assertIn(f"of {len(logins)} logins", rate)
        self.assertEqual(len(self.driver.find_elements(By.CSS_SELECTOR, "#chart-latency rect")), 3)
        devices = self.by_id("chart-devices").find_element(By.TAG_NAME, "svg").get_attribute("aria-label")
        # device-b failed four times (three no-match, one locked), device-c once; device-a and device-d never.
        self.assertIn("device-b 4", devices)
        self.assertIn("device-c 1", devices)
        self.assertNotIn("device-a", devices)
        self.by_id("charts").location_once_scrolled_into_view
        self.screenshot("auditor-charts.png")

    # --- operator ---------------------------------------------------------------------------------------------------
    def test_07_operator_changes_settings_only_after_confirming(self):
        app_id = seed["app"]["appId"]
        before = stack.admin("GET", f"/v1/apps/{app_id}").json()
        self.open_seeded_app()
        self.assertTrue(self.driver.current_url.endswith(f"#operator/app/{app_id}"), "an app has a page of its own")
        ctid = Select(self.by_id("set-module-ctid"))
        self.assertEqual(ctid.first_selected_option.get_attribute("value"), "disabled")
        # What the threshold stands for at the gallery's size, as the app's view says it.
        estimate = self.by_id("threshold-estimate").text
        self.assertIn(f"{before['galleryTemplates']} templates", estimate)
        self.assertIn("a stranger identified as someone:", estimate)
        ctid.select_by_value("trial")
        self.by_id("settings-submit").click()
        dialog = self.visible("confirm-dialog")
        self.assertIn("modules.ctid: disabled → trial", dialog.text)
        self.screenshot("operator-confirm.png")
        self.by_id("confirm-cancel").click()
        self.wait(lambda d: "Not changed" in d.find_element(By.ID, "settings-status").text)
        self.assertEqual(stack.admin("GET", f"/v1/apps/{app_id}").json()["modules"]["ctid"], "disabled", "cancel changes nothing")
        self.assertEqual(Select(self.by_id("set-module-ctid")).first_selected_option.get_attribute("value"), "disabled")

        Select(self.by_id("set-module-ctid")).select_by_value("trial")
        calls = self.by_id("set-daily-calls")
        calls.clear()
        calls.send_keys("777")
        self.by_id("settings-submit").click()
        self.assertIn("quotas.dailyCalls: 1000 → 777", self.visible("confirm-dialog").text)
        self.by_id("confirm-ok").click()
        self.wait(lambda d: "Changed:" in d.find_element(By.ID, "settings-status").text)
        after = stack.admin("GET", f"/v1/apps/{app_id}").json()
        self.assertEqual((after["modules"]["ctid"], after["quotas"]["dailyCalls"]), ("trial", 777))
        self.assertEqual((after["matchThreshold"], after["liveness"]), (before["matchThreshold"], before["liveness"]), "what was not changed is kept")
        row = api_items(appId=app_id, kind="app.update")[0]
        self.assertEqual(row["change"], {"modules.ctid": ["disabled", "trial"], "quotas": [before["quotas"], after["quotas"]]})
        self.assertEqual(row["actor"], {"type": "operator", "id": "bootstrap"})
        # The page is a link: reloading it opens the same app with the stored settings.
        self.driver.refresh()
        self.wait(lambda d: d.find_element(By.ID, "app-title").text == "Console test app")
        self.assertEqual(Select(self.by_id("set-module-ctid")).first_selected_option.get_attribute("value"), "trial")
        stack.admin("PATCH", f"/v1/apps/{app_id}", {"quotas": before["quotas"]})

    def test_08_operator_sees_template_quality_and_enrolls_with_a_verdict(self):
        self.open_seeded_app()
        obama = self.driver.find_element(By.CSS_SELECTOR, f"#users-rows tr[data-user-id='{seed['users']['E1001']}']")
        self.assertEqual(obama.find_element(By.CSS_SELECTOR, "[data-field=faces]").text, "1")
        obama.find_element(By.TAG_NAME, "button").click()
        template = self.wait(lambda d: d.find_element(By.CSS_SELECTOR, "#faces-detail .template"))
        stored = stack.admin("GET", f"/v1/apps/{seed['app']['appId']}/users/{seed['users']['E1001']}/faces").json()["items"]
        # The listing returns what enrollment measured, for the template enrollment created.
        self.assertEqual([(face["templateId"], face["quality"]) for face in stored], [(seed["enrolled"]["templateId"], seed["enrolled"]["quality"])])
        self.assertEqual(template.get_attribute("data-template-id"), stored[0]["templateId"])
        self.assertIn(f"{stored[0]['quality']['faceWidth']} px", template.text)

        Select(self.by_id("enroll-user")).select_by_value(seed["users"]["E1002"])
        self.by_id("enroll-photo").send_keys(os.path.join(stack.images, "biden.jpg"))
        self.by_id("enroll-submit").click()
        verdict = self.wait(lambda d: d.find_element(By.ID, "enroll-verdict"), timeout=30)
        self.assertEqual(verdict.get_attribute("data-verdict"), "accepted", verdict.text)
        quality = self.by_id("enroll-result").find_element(By.CLASS_NAME, "quality").text
        self.assertIn("Face width", quality)
        self.assertIn("Sharpness", quality)
        self.wait(lambda d: d.find_element(By.CSS_SELECTOR, f"#users-rows tr[data-user-id='{seed['users']['E1002']}'] [data-field=faces]").text == "1")
        self.screenshot("operator.png")

        # A photo without a face: rejected, with the API's code shown.
        blank = os.path.join(stack.state, "blank.png")
        harness.subprocess.run(["convert", "-size", "320x240", "xc:#8899aa", blank], check=True)
        Select(self.by_id("enroll-user")).select_by_value(seed["users"]["E1002"])
        self.by_id("enroll-photo").send_keys(blank)
        self.by_id("enroll-submit").click()
        self.wait(lambda d: d.find_element(By.ID, "enroll-verdict").get_attribute("data-verdict") == "rejected", timeout=30)
        verdict = self.by_id("enroll-verdict")
        self.assertIn(verdict.get_attribute("data-code"), ("NO_FACE", "IMAGE_FORMAT_ERROR", "LOW_QUALITY"))
        self.assertIn("Rejected", verdict.text)

    def test_08b_operator_adds_a_user(self):
        self.open_seeded_app()
        self.by_id("user-number").send_keys("E1003")
        self.by_id("user-name").send_keys("Ada Lovelace")
        self.by_id("user-name").send_keys(Keys.ENTER)
        self.wait(lambda d: "User Ada Lovelace added" in d.find_element(By.ID, "users-status").text)
        users = stack.admin("GET", f"/v1/apps/{seed['app']['appId']}/users").json()["items"]
        added = next(user for user in users if user["employeeNumber"] == "E1003")
        self.assertEqual(added["name"], "Ada Lovelace")
        row = self.wait(lambda d: d.find_element(By.CSS_SELECTOR, f"#users-rows tr[data-user-id='{added['userId']}']"))
        self.assertIn("Ada Lovelace", row.text)
        # Adding the same employee number again is refused with the API's conflict.
        self.by_id("user-number").send_keys("E1003")
        self.by_id("user-name").send_keys("Someone Else")
        self.by_id("user-name").send_keys(Keys.ENTER)
        self.wait(lambda d: "CONFLICT" in d.find_element(By.ID, "users-status").text)

    def test_09_operator_resets_a_locked_device(self):
        self.assertEqual(stack.face_login(seed["token"], "device-b", "biden.jpg").status, 423)
        self.open_seeded_app()
        self.by_id("reset-device").send_keys("device-b")
        self.by_id("reset-submit").click()
        self.wait(lambda d: "Device device-b reset" in d.find_element(By.ID, "reset-status").text)
        # Unlocked: the next attempt is matched again (Biden is enrolled by now, so it succeeds or asks to confirm).
        answer = stack.face_login(seed["token"], "device-b", "biden.jpg")
        self.assertIn(answer.status, (200, 422), answer.body)

    def test_10_operator_gets_a_demo_access_token(self):
        self.open_seeded_app()
        self.by_id("token-secret").send_keys(seed["app"]["appSecret"])
        self.by_id("token-submit").click()
        self.visible("token-output")
        token = self.by_id("token-value").get_attribute("value")
        self.assertEqual(token.count("."), 2)
        # The token works as a client credential.
        challenge_free_call = stack.call("POST", "/v1/face-login", bearer=token, body=stack.image("obama2.jpg"),
                                         content_type="image/jpeg", headers={"X-Device-Id": "token-check"})
        self.assertEqual(challenge_free_call.status, 200, challenge_free_call.body)
        self.assertEqual(self.by_id("token-secret").get_attribute("value"), "")
        seed["consoleToken"] = token

    # --- accessibility and layout ------------------------------------------------------------------------------------
    def tab_through(self, count):
        reached = []
        outlines = {}
        for _ in range(count):
            ActionChains(self.driver).send_keys(Keys.TAB).perform()
            element = self.driver.switch_to.active_element
            key = element.get_attribute("id") or element.get_attribute("aria-label") or element.text
            reached.append(key)
            outlines[key] = self.driver.execute_script("const s = getComputedStyle(arguments[0]); return s.outlineStyle + ' ' + s.outlineWidth;", element)
        return reached, outlines

    def test_11_keyboard_alone_reaches_the_main_controls(self):
        self.driver.get(stack.url + "/console/")
        if self.by_id("who").is_displayed():
            self.by_id("signout").click()
        self.driver.find_element(By.TAG_NAME, "body").click()
        reached, _ = self.tab_through(4)
        self.assertIn("signin-key", reached)
        self.assertIn("signin-submit", reached)
        self.sign_in(stack.admin_key)
        self.search(limit=10)  # more than one page, so the paging buttons are enabled (and focusable)
        # Tab from the top of the page: the skip link is its first stop.
        self.driver.execute_script("window.scrollTo(0, 0); document.querySelector('.skip-link').focus()")
        reached, outlines = self.tab_through(45)
        for control in ("nav-auditor", "nav-operator", "nav-kiosk", "signout", "f-app", "f-kind", "f-outcome", "f-device", "f-limit",
                        "audit-search", "audit-csv", "audit-next"):
            self.assertIn(control, reached, f"Tab never reached {control}: {reached}")
            self.assertTrue(outlines[control].startswith("solid"), f"no visible focus on {control}: {outlines[control]}")
        # The table is one tab stop; the arrow keys move between its rows.
        details = [key for key in reached if str(key).startswith("Details of transaction")]
        self.assertEqual(len(details), 1, reached)
        first = self.driver.find_elements(By.CSS_SELECTOR, "#audit-rows button.row-details")[:2]
        first[0].send_keys(Keys.ARROW_DOWN)
        self.assertEqual(self.driver.switch_to.active_element, first[1])
        self.driver.switch_to.active_element.send_keys(Keys.ENTER)
        self.visible("drawer")
        ActionChains(self.driver).send_keys(Keys.ESCAPE).perform()
        self.wait(lambda d: not d.find_element(By.ID, "drawer").is_displayed())
        self.open_seeded_app()
        self.driver.execute_script("document.activeElement.blur(); document.getElementById('app-title').scrollIntoView()")
        self.driver.find_element(By.ID, "app-title").click()  # Tab continues from here, as after a click on the heading
        reached, outlines = self.tab_through(80)
        for control in ("set-module-faceLogin", "set-threshold", "settings-submit", "secret-rotate", "users-search", "enroll-user",
                        "enroll-photo", "enroll-submit", "search-photo", "search-submit", "reset-device", "reset-submit", "token-secret",
                        "token-submit", "delete-confirm-name"):
            self.assertIn(control, reached, f"Tab never reached {control}: {reached}")
        self.assertTrue(outlines["reset-submit"].startswith("solid"))

    def test_12_phone_width_layout_has_no_horizontal_scroll(self):
        self.driver.set_window_size(390, 844)
        try:
            self.sign_in(stack.admin_key)
            overflow = self.driver.execute_script("return document.documentElement.scrollWidth - window.innerWidth")
            self.assertLessEqual(overflow, 0)
            self.assertFalse(self.driver.find_element(By.CSS_SELECTOR, "#audit-table th.optional").is_displayed())
            self.screenshot("phone-auditor.png")
            self.open_seeded_app()
            overflow = self.driver.execute_script("return document.documentElement.scrollWidth - window.innerWidth")
            self.assertLessEqual(overflow, 0)
            self.screenshot("phone-operator.png")
        finally:
            self.driver.set_window_size(1280, 900)

    def test_14_apps_are_searched_and_paged(self):
        for index in range(22):
            assert stack.admin("POST", "/v1/apps", {"name": f"Paging app {index:02d}"}).status == 201
        self.sign_in(stack.admin_key, view="operator")
        self.wait(lambda d: d.find_elements(By.CSS_SELECTOR, "#apps-rows tr[data-app-id]"))
        self.by_id("apps-search").send_keys("Paging app")
        self.wait(lambda d: d.find_element(By.ID, "apps-page").text.startswith("22 apps · page 1 of 2"))
        self.assertEqual(len(self.driver.find_elements(By.CSS_SELECTOR, "#apps-rows tr[data-app-id]")), 20)
        self.screenshot("operator-apps.png")
        self.by_id("apps-next").click()
        self.wait(lambda d: d.find_element(By.ID, "apps-page").text.endswith("page 2 of 2"))
        self.assertEqual(len(self.driver.find_elements(By.CSS_SELECTOR, "#apps-rows tr[data-app-id]")), 2)
        search = self.by_id("apps-search")
        search.clear()
        search.send_keys("Paging app 07")
        self.wait(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#apps-rows tr[data-app-id]")) == 1)
        self.assertIn("Paging app 07", self.by_id("apps-rows").text)

    def test_15_users_and_templates_are_searched_viewed_and_deleted(self):
        app_id = seed["app"]["appId"]
        biden = seed["users"]["E1002"]
        if not stack.admin("GET", f"/v1/apps/{app_id}/users/{biden}/faces").json()["items"]:
            assert stack.admin("POST", f"/v1/apps/{app_id}/users/{biden}/faces", body=stack.image("biden.jpg"), content_type="image/jpeg").status == 201
        temporary = stack.admin("POST", f"/v1/apps/{app_id}/users", {"employeeNumber": "E1904", "name": "Temporary Person"}).json()["userId"]
        self.open_seeded_app()
        self.by_id("users-search").send_keys("Biden")
        self.wait(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#users-rows tr[data-user-id]")) == 1)
        self.click(f"#users-rows tr[data-user-id='{biden}'] button[data-action=templates]")
        template = self.wait(lambda d: d.find_element(By.CSS_SELECTOR, "#faces-detail .template"))
        template_id = template.get_attribute("data-template-id")
        template.find_element(By.TAG_NAME, "button").click()
        self.assertIn(template_id, self.visible("confirm-dialog").text)
        self.by_id("confirm-ok").click()
        self.wait(lambda d: "Template of Joe Biden deleted" in d.find_element(By.ID, "users-status").text)
        self.assertEqual(stack.admin("GET", f"/v1/apps/{app_id}/users/{biden}/faces").json()["items"], [])
        self.wait(lambda d: d.find_element(By.CSS_SELECTOR, f"#users-rows tr[data-user-id='{biden}'] [data-field=faces]").text == "0")

        search = self.by_id("users-search")
        search.clear()
        search.send_keys("E1904")
        self.wait(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#users-rows tr[data-user-id]")) == 1)
        self.click(f"#users-rows tr[data-user-id='{temporary}'] button[data-action=delete]")
        self.assertIn("Temporary Person", self.visible("confirm-dialog").text)
        self.by_id("confirm-ok").click()
        self.wait(lambda d: "User Temporary Person deleted" in d.find_element(By.ID, "users-status").text)
        self.assertEqual(stack.admin("GET", f"/v1/apps/{app_id}/users/{temporary}").status, 404)
        assert stack.admin("POST", f"/v1/apps/{app_id}/users/{biden}/faces", body=stack.image("biden.jpg"), content_type="image/jpeg").status == 201

    def test_16_a_photo_is_tested_against_the_app(self):
        self.open_seeded_app()
        self.by_id("search-photo").send_keys(os.path.join(stack.images, "obama3.jpg"))
        self.by_id("search-submit").click()
        outcome = self.wait(lambda d: d.find_element(By.ID, "search-outcome"), timeout=30)
        self.assertIn("Match: E1001", outcome.text)
        best = self.driver.find_element(By.CSS_SELECTOR, "#search-result tbody tr")
        self.assertEqual((best.get_attribute("data-user-id"), best.get_attribute("data-match")), (seed["users"]["E1001"], "true"))
        self.assertIn("Barack Obama", best.text)
        self.screenshot("operator-test-photo.png")

    def test_17_the_secret_is_rotated_and_keys_are_managed(self):
        created = stack.admin("POST", "/v1/apps", {"name": "Rotation app"}).json()
        app_id, old_secret = created["appId"], created["appSecret"]
        self.sign_in(stack.admin_key, view="operator")
        self.driver.get(f"{stack.url}/console/#operator/app/{app_id}")
        self.wait(lambda d: d.find_element(By.ID, "app-title").text == "Rotation app")
        grace = self.by_id("secret-grace")
        grace.clear()
        grace.send_keys("600")
        self.by_id("secret-rotate").click()
        self.assertIn("600 s", self.visible("confirm-dialog").text)
        self.by_id("confirm-ok").click()
        secret = self.wait(lambda d: d.find_element(By.ID, "rotated-app-secret")).text
        self.assertTrue(secret.startswith("fgs_") and secret != old_secret)
        self.assertEqual(stack.call("POST", "/v1/access-tokens", basic=f"{app_id}:{secret}").status, 200)
        self.assertEqual(stack.call("POST", "/v1/access-tokens", basic=f"{app_id}:{old_secret}").status, 200, "the old one during its grace")

        self.by_id("app-back").click()
        self.visible("keys-panel")
        Select(self.by_id("key-role")).select_by_value("auditor")
        self.by_id("key-name").send_keys("Console-made auditor")
        Select(self.by_id("key-app")).select_by_value(app_id)
        self.by_id("key-submit").click()
        key = self.wait(lambda d: d.find_element(By.ID, "created-key")).text
        self.assertEqual(stack.call("GET", f"/v1/audit/transactions?appId={app_id}", bearer=key).status, 200)
        auditor = next(item for item in stack.admin("GET", "/v1/auditors").json()["items"] if item["name"] == "Console-made auditor")
        row = f"#keys-rows tr[data-key-id='{auditor['auditorId']}']"
        self.wait(lambda d: "Rotation app" in (d.execute_script("return document.querySelector(arguments[0])?.textContent", row) or ""))
        self.screenshot("operator-keys.png")
        self.click(f"{row} button")
        self.visible("confirm-dialog")
        self.by_id("confirm-ok").click()
        revoked = f"return document.querySelector(\"#keys-rows tr[data-key-id='{auditor['auditorId']}']\")?.dataset.state"
        self.wait(lambda d: d.execute_script(revoked) == "revoked")
        self.assertEqual(stack.call("GET", f"/v1/audit/transactions?appId={app_id}", bearer=key).status, 401)

    def test_18_auditors_see_app_names_and_filter_in_utc(self):
        app_id = seed["app"]["appId"]
        # A browser far from UTC: the filter still means the UTC times the table shows.
        self.driver.execute_cdp_cmd("Emulation.setTimezoneOverride", {"timezoneId": "Asia/Shanghai"})
        try:
            self.sign_in(seed["auditorKey"])
            self.assertEqual(self.by_id("who-role").text, "auditor")
            self.wait(lambda d: d.find_element(By.CSS_SELECTOR, "#audit-rows [data-field=app]").text == "Console test app")
            items = api_items(appId=app_id)
            middle = items[len(items) // 2]["createdAt"][:19]  # "YYYY-MM-DDTHH:MM:SS", UTC
            self.driver.execute_script("document.getElementById('f-from').value = arguments[0]", middle)
            self.search(appId=app_id, limit=100)
            expected = api_items(appId=app_id, **{"from": middle + "Z"})
            self.assertEqual(len(self.rows()), min(100, len(expected)))
            self.assertEqual(self.rows()[-1].get_attribute("data-transaction-id"), expected[min(100, len(expected)) - 1]["transactionId"])
            self.driver.execute_script("document.getElementById('f-from').value = ''")
            self.by_id("chain-refresh").click()
            item = self.wait(lambda d: d.find_element(By.CSS_SELECTOR, f"#chain-list li[data-app-id='{app_id}'][data-state]"))
            self.assertIn("Console test app", item.text)
            self.screenshot("auditor-names.png")
        finally:
            self.driver.execute_cdp_cmd("Emulation.setTimezoneOverride", {"timezoneId": ""})

    def test_19_an_app_is_deleted_from_its_page(self):
        doomed = stack.admin("POST", "/v1/apps", {"name": "Doomed app"}).json()["appId"]
        self.sign_in(stack.admin_key, view="operator")
        self.driver.get(f"{stack.url}/console/#operator/app/{doomed}")
        self.wait(lambda d: d.find_element(By.ID, "app-title").text == "Doomed app")
        self.by_id("delete-confirm-name").send_keys("Doomed ap")
        self.by_id("delete-submit").click()
        self.wait(lambda d: "Type the app's name" in d.find_element(By.ID, "delete-status").text)
        self.assertEqual(stack.admin("GET", f"/v1/apps/{doomed}").status, 200)
        self.by_id("delete-confirm-name").send_keys("p")
        self.by_id("delete-submit").click()
        self.visible("confirm-dialog")
        self.by_id("confirm-ok").click()
        self.wait(lambda d: "App Doomed app deleted" in d.find_element(By.ID, "apps-status").text)
        self.assertTrue(self.by_id("app-list").is_displayed())
        self.assertEqual(stack.admin("GET", f"/v1/apps/{doomed}").status, 404)

    def test_13_a_broken_chain_shows_its_first_broken_row(self):
        app_id = seed["app"]["appId"]
        victim = api_items(appId=app_id, kind="face.login")[-1]["transactionId"]
        stack.psql(f"UPDATE transactions SET outcome = 'TAMPERED' WHERE id = '{victim}'", database=stack.db_url)
        expected = stack.admin("GET", f"/v1/audit/verify?appId={app_id}").json()
        self.assertFalse(expected["ok"])
        self.sign_in(stack.admin_key)
        self.by_id("chain-refresh").click()
        item = self.wait(lambda d: d.find_element(By.CSS_SELECTOR, f"#chain-list li[data-app-id='{app_id}'][data-state]"))
        self.assertEqual(item.get_attribute("data-state"), "broken")
        self.assertIn(expected["firstBrokenTransactionId"], item.text)
        self.by_id("chain-list").location_once_scrolled_into_view
        self.screenshot("auditor-chain-broken.png")


class KioskPageTests(unittest.TestCase):
    driver = None

    @classmethod
    def setUpClass(cls):
        video = harness.challenge_video(os.path.join(stack.images, "obama.jpg"), os.path.join(stack.state, "obama.y4m"))
        cls.driver = make_driver(["--use-fake-ui-for-media-stream", "--use-fake-device-for-media-stream",
                                  f"--use-file-for-fake-video-capture={video}"])

    def tearDown(self):
        drain_logs(self.driver)

    def start_camera(self):
        token = stack.call("POST", "/v1/access-tokens", basic=f"{seed['app']['appId']}:{seed['app']['appSecret']}").json()["accessToken"]
        self.driver.get(stack.url + "/console/kiosk.html")
        # The page's own DPoP key, kept in the browser: the operator registers it (once; the key survives reloads).
        jkt = WebDriverWait(self.driver, 20).until(lambda d: d.find_element(By.ID, "kiosk-jkt").get_attribute("value"))
        registered = stack.admin("POST", f"/v1/apps/{seed['app']['appId']}/kiosks", {"name": "Console kiosk", "jkt": jkt})
        assert registered.status in (201, 409), registered.body
        field = WebDriverWait(self.driver, 20).until(lambda d: d.find_element(By.ID, "kiosk-token"))
        field.clear()
        field.send_keys(token)
        self.driver.find_element(By.ID, "kiosk-start").click()
        WebDriverWait(self.driver, 20).until(lambda d: "Camera ready" in d.find_element(By.ID, "kiosk-setup-status").text)

    def test_20_kiosk_page_opens_the_camera(self):
        self.start_camera()
        WebDriverWait(self.driver, 20).until(lambda d: d.execute_script(
            "const v = document.getElementById('kiosk-video'); return v.readyState >= 2 && v.videoWidth > 0"))
        self.assertEqual(self.driver.execute_script("return document.getElementById('kiosk-video').videoWidth"), 640)
        self.assertTrue(self.driver.find_element(By.ID, "kiosk-login").is_enabled())
        self.assertTrue(self.driver.execute_script("return window.isSecureContext"))
        # A frame from the camera is the fake video's picture, not a black image.
        mean = self.driver.execute_script("""
            const v = document.getElementById('kiosk-video'); const c = document.createElement('canvas');
            c.width = 64; c.height = 48; const g = c.getContext('2d'); g.drawImage(v, 0, 0, 64, 48);
            const d = g.getImageData(0, 0, 64, 48).data; let s = 0; for (let i = 0; i < d.length; i += 4) s += d[i];
            return s / (d.length / 4);""")
        self.assertGreater(mean, 20)
        self.driver.execute_script("window.scrollTo(0, 0)")
        self.driver.save_screenshot(os.path.join(ARTIFACTS, "kiosk.png"))
        self.driver.set_window_size(390, 844)
        try:
            self.assertLessEqual(self.driver.execute_script("return document.documentElement.scrollWidth - window.innerWidth"), 0)
            self.driver.save_screenshot(os.path.join(ARTIFACTS, "phone-kiosk.png"))
        finally:
            self.driver.set_window_size(1280, 900)

        # Camera frames: the challenge's prompts are shown over the picture while frames are captured, and the API's
        # verdict on them is shown (the fake camera loops acted-out frames in a fixed order while the challenge is
        # random, so the verdict may be either; file frames below check each outcome exactly).
        self.driver.find_element(By.ID, "kiosk-login").click()
        WebDriverWait(self.driver, 20).until(lambda d: d.find_element(By.ID, "kiosk-prompt").text in
                                             ("Blink", "Turn your head to the left", "Turn your head to the right"))
        final = WebDriverWait(self.driver, 60).until(lambda d: d.find_element(By.ID, "kiosk-final"))
        self.assertIn(final.get_attribute("data-code"), ("SUCCESS", "SPOOF_DETECTED"), final.text)
        self.assertEqual(len(self.driver.find_elements(By.CSS_SELECTOR, "#kiosk-challenge li.done")),
                         len(self.driver.find_elements(By.CSS_SELECTOR, "#kiosk-challenge li[data-action]")))
        self.driver.execute_script("document.getElementById('kiosk-final').scrollIntoView({block: 'center'})")
        self.driver.save_screenshot(os.path.join(ARTIFACTS, "kiosk-camera-login.png"))

    # --- image files as frames: the challenge is random, so the test acts it out after reading it off the page --------
    def use_image_files(self):
        self.driver.find_element(By.ID, "source-files").click()

    def answer_challenge(self, photo, name, repeat_still=False):
        """Waits for the page to ask for frames, reads the challenge it shows, and chooses files acting it out (or, with
        `repeat_still`, the same photo five times over)."""
        wait = WebDriverWait(self.driver, 30)
        wait.until(lambda d: d.find_element(By.ID, "kiosk-frame-files").is_enabled())
        actions = [item.get_attribute("data-action") for item in self.driver.find_elements(By.CSS_SELECTOR, "#kiosk-challenge li[data-action]")]
        self.assertTrue(2 <= len(actions) <= 3, actions)
        self.assertEqual(len(set(actions)), len(actions), actions)
        self.assertTrue(set(actions) <= {"BLINK", "TURN_LEFT", "TURN_RIGHT"}, actions)
        status = self.driver.find_element(By.ID, "kiosk-status").text
        for action in actions:
            self.assertIn({"BLINK": "Blink", "TURN_LEFT": "to the left", "TURN_RIGHT": "to the right"}[action], status)
        out = os.path.join(stack.state, "frames", name)
        shutil.rmtree(out, ignore_errors=True)
        os.makedirs(out)
        if repeat_still:
            paths = []
            for index in range(5):
                paths.append(os.path.join(out, f"still{index}.jpg"))
                shutil.copyfile(photo, paths[-1])
        else:
            paths = harness.burst(photo, actions, out)
            self.assertTrue(2 <= len(paths) <= 12, paths)
        self.driver.find_element(By.ID, "kiosk-frame-files").send_keys("\n".join(paths))
        return actions

    def kiosk_screenshot(self, name, element_id):
        self.driver.execute_script("document.getElementById(arguments[0]).scrollIntoView({block: 'center'})", element_id)
        self.driver.save_screenshot(os.path.join(ARTIFACTS, name))

    def final(self, timeout=60):
        return WebDriverWait(self.driver, timeout).until(lambda d: d.find_element(By.ID, "kiosk-final"))

    def stream_event(self, name, timeout=60):
        return WebDriverWait(self.driver, timeout).until(
            lambda d: d.find_element(By.CSS_SELECTOR, f"#kiosk-events li[data-event={name}][data-source=stream]"), name)

    def test_21_kiosk_login_and_onboarding_against_the_kiosk_api(self):
        """Against the kiosk API: the challenge is shown as prompts and answered by image files acting it out; the
        enrolled face is recognised, a replayed still is a spoof, an unknown face is onboarded with the step events
        arriving on the session's event stream, and a cancel ends it."""
        images = stack.images
        app_id = seed["app"]["appId"]

        # (1) Obama, enrolled from obama2.jpg, logs in with a burst made from obama.jpg.
        self.start_camera()
        self.use_image_files()
        self.driver.find_element(By.ID, "kiosk-login").click()
        self.answer_challenge(os.path.join(images, "obama.jpg"), "obama-login")
        final = self.final()
        self.assertEqual(final.get_attribute("data-outcome"), "ok", final.text)
        self.assertIn("Welcome, Barack.", final.text)
        self.assertEqual(final.get_attribute("data-customer"), seed["users"]["E1001"])
        self.assertIn(seed["users"]["E1001"], final.text)
        self.kiosk_screenshot("kiosk-login-success.png", "kiosk-final")

        # (2) The same photo five times over answers no challenge: refused as a spoof.
        self.driver.find_element(By.ID, "kiosk-login").click()
        self.answer_challenge(os.path.join(images, "obama.jpg"), "obama-still", repeat_still=True)
        final = WebDriverWait(self.driver, 60).until(lambda d: d.find_element(By.CSS_SELECTOR, "#kiosk-final:not([data-code=SUCCESS])"))
        self.assertEqual(final.get_attribute("data-outcome"), "spoof", final.text)
        self.assertEqual(final.get_attribute("data-code"), "SPOOF_DETECTED")
        self.assertIn("Spoof suspected", final.text)
        self.assertIn("liveness check failed", self.driver.find_element(By.ID, "kiosk-status").text)
        self.kiosk_screenshot("kiosk-login-spoof.png", "kiosk-final")
        outcomes = [item["outcome"] for item in api_items(appId=app_id, kind="kiosk.login")]
        self.assertEqual(sorted(outcomes[:2]), ["SPOOF_DETECTED", "SUCCESS"], outcomes)

        # (3) Biden, no longer enrolled, is unknown: onboarding starts and its step events arrive on the event stream.
        deleted = stack.admin("DELETE", f"/v1/apps/{app_id}/users/{seed['users']['E1002']}")
        self.assertIn(deleted.status, (200, 204, 404), deleted.body)
        self.wait_until_unknown("biden.jpg")
        self.start_camera()
        self.use_image_files()
        self.driver.find_element(By.ID, "kiosk-login").click()
        self.answer_challenge(os.path.join(images, "biden.jpg"), "biden-login")
        WebDriverWait(self.driver, 60).until(lambda d: d.find_element(By.ID, "onboarding").is_displayed())
        self.assertEqual(self.driver.find_element(By.ID, "kiosk-steps").get_attribute("data-state"), "selfie")
        self.driver.find_element(By.ID, "kiosk-selfie").click()
        self.answer_challenge(os.path.join(images, "biden.jpg"), "biden-selfie")
        selfie = self.stream_event("selfieScanCompleted")
        self.assertIn('"existingUser":false', selfie.text)
        self.assertIn('"success":true', selfie.text)
        WebDriverWait(self.driver, 30).until(lambda d: d.find_element(By.ID, "step-idFront").is_displayed())
        self.assertEqual(self.driver.find_element(By.ID, "kiosk-steps").get_attribute("data-state"), "idFront")
        # A document photo without a face fails on its merits (a 200 whose event says NO_PORTRAIT): retake.
        blank = os.path.join(stack.state, "no-portrait.png")
        harness.subprocess.run(["convert", "-size", "640x400", "xc:#c8d4e0", blank], check=True)
        self.driver.find_element(By.ID, "kiosk-id-front-file").send_keys(blank)
        WebDriverWait(self.driver, 60).until(lambda d: "idFrontCompleted: NO_PORTRAIT" in d.find_element(By.ID, "kiosk-status").text)
        self.assertIn('"error":"NO_PORTRAIT"', self.stream_event("idFrontCompleted").text)
        self.assertEqual(self.driver.find_element(By.ID, "kiosk-steps").get_attribute("data-state"), "idFront")
        self.driver.find_element(By.ID, "kiosk-id-front-file").send_keys(os.path.join(images, "biden.jpg"))
        front = WebDriverWait(self.driver, 60).until(lambda d: [item for item in d.find_elements(
            By.CSS_SELECTOR, "#kiosk-events li[data-event=idFrontCompleted][data-source=stream]") if '"success":true' in item.text])[0]
        WebDriverWait(self.driver, 30).until(lambda d: "Step done; next: idBack" in d.find_element(By.ID, "kiosk-status").text)
        WebDriverWait(self.driver, 30).until(lambda d: d.find_element(By.ID, "kiosk-steps").get_attribute("data-state") == "idBack")
        self.assertTrue(self.driver.find_element(By.ID, "step-idBack").is_displayed())
        seqs = [int(item.get_attribute("data-seq")) for item in self.driver.find_elements(By.CSS_SELECTOR, "#kiosk-events li")]
        self.assertEqual(seqs, sorted(seqs))
        self.kiosk_screenshot("kiosk-onboarding.png", "onboarding")

        self.driver.find_element(By.ID, "kiosk-cancel").click()
        self.stream_event("userCancelledSession", timeout=30)
        self.assertEqual(self.final().get_attribute("data-code"), "CANCELLED")
        self.assertFalse(self.driver.find_element(By.ID, "kiosk-cancel").is_displayed())
        states = stack.psql(f"SELECT state FROM kiosk_sessions WHERE app_id = '{app_id}'", database=stack.db_url).split()
        self.assertEqual(states, ["cancelled"])
        self.kiosk_screenshot("kiosk-onboarding-cancelled.png", "onboarding")

    def wait_until_unknown(self, image, timeout=60):
        """The matchers drop a deleted user's templates on the gallery change; a face login from a throwaway device tells
        when (it counts as a failure on that device only)."""
        deadline = time.monotonic() + timeout
        probe = 0
        while time.monotonic() < deadline:
            probe += 1
            answer = stack.face_login(seed["token"], f"gallery-probe-{probe}", image)
            if answer.status == 422 and answer.json()["error"]["code"] == "NO_MATCH_FACE":
                return
            time.sleep(1)
        self.fail(f"{image} was still matched {timeout} s after its user was deleted")


class ZZBrowserHygieneTests(unittest.TestCase):
    """Runs last: checks what every page above logged and asked the network for."""

    def test_99_no_console_errors_and_no_request_to_another_host(self):
        for driver in drivers:
            drain_logs(driver)
        self.assertTrue(requested_urls, "no request was recorded: performance logging is not working")
        for url in requested_urls:
            parsed = urllib.parse.urlparse(url)
            if parsed.scheme not in ("http", "https", "ws", "wss"):
                continue  # data:, blob: and the browser's own chrome:// pages never reach the network
            self.assertIn(parsed.hostname, LOCAL_HOSTS, f"request to a non-local host: {url}")
        # Deliberately provoked API failures (a wrong key, a duplicate employee number, a rejected photo) are logged by Chromium as failed loads;
        # anything else (script errors, CSP violations, missing files) is a defect.
        unexpected = [message for message in browser_errors
                      if not ("/v1/" in message and "Failed to load resource" in message and any(f"status of {code}" in message for code in (401, 409, 422)))]
        self.assertEqual(unexpected, [])


if __name__ == "__main__":
    unittest.main()
