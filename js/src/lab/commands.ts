// The extension's own commands (issue 32 §3): lecture mode in any running JupyterLab or Notebook 7 (palette, View
// menu, a toggle on each notebook's toolbar), and the Launcher card "attnwidgets tutorials".

import type { JupyterFrontEnd, JupyterFrontEndPlugin } from "@jupyterlab/application";
import { ICommandPalette } from "@jupyterlab/apputils";
import { ILauncher } from "@jupyterlab/launcher";
import { IMainMenu } from "@jupyterlab/mainmenu";
import { INotebookTracker } from "@jupyterlab/notebook";
import { ServerConnection } from "@jupyterlab/services";
import { ToolbarButton, notebookIcon } from "@jupyterlab/ui-components";
import { LECTURE_EVENT } from "../shared/widget_shell";

export const LECTURE_COMMAND = "attnwidgets:lecture-mode";
export const TUTORIALS_COMMAND = "attnwidgets:open-tutorials";

/** JupyterLab's font sizes in lecture mode (what `attnwidgets lab --lecture` starts in: lab.py LECTURE_ENV),
 * and a prompt column wide enough for "[100]:" in 18 px code (JupyterLab's 64 px cut the execution count from [10]
 * on to "[1…"). */
export const LECTURE_FONTS: Readonly<Record<string, string>> = {
  "--jp-code-font-size": "18px",
  "--jp-content-font-size1": "20px",
  "--jp-ui-font-size1": "16px",
  "--jp-cell-prompt-width": "92px",
};

/** Lecture mode on or off: JupyterLab's fonts (CSS variables on the document, what its theme overrides set; the
 * values before are put back) and every view's theme (widget_shell.ts followLectureMode). */
class LectureMode {
  on = false;
  private before: Record<string, string> = {};

  set(on: boolean): void {
    if (on === this.on) return;
    this.on = on;
    const root = document.documentElement;
    for (const [name, size] of Object.entries(LECTURE_FONTS)) {
      if (on) {
        this.before[name] = root.style.getPropertyValue(name);
        root.style.setProperty(name, size);
      } else if (this.before[name]) root.style.setProperty(name, this.before[name]);
      else root.style.removeProperty(name);
    }
    if (on) root.dataset.awLecture = "1";
    else delete root.dataset.awLecture;
    window.dispatchEvent(new CustomEvent(LECTURE_EVENT, { detail: on ? "lecture" : null }));
  }
}

export const lecturePlugin: JupyterFrontEndPlugin<void> = {
  id: "attnwidgets:lecture-mode",
  description:
    "Lecture mode: JupyterLab's fonts enlarged and every attnwidgets view in the lecture theme, and back.",
  autoStart: true,
  optional: [ICommandPalette, IMainMenu, INotebookTracker],
  activate: (
    app: JupyterFrontEnd,
    palette: ICommandPalette | null,
    menu: IMainMenu | null,
    notebooks: INotebookTracker | null,
  ) => {
    const mode = new LectureMode();
    const buttons = new Set<ToolbarButton>();
    app.commands.addCommand(LECTURE_COMMAND, {
      label: "Lecture Mode (attnwidgets)",
      caption:
        "Enlarge JupyterLab's fonts and show every attnwidgets view in the lecture theme (again: back)",
      isToggled: () => mode.on,
      execute: () => {
        mode.set(!mode.on);
        for (const b of buttons) b.pressed = mode.on;
        app.commands.notifyCommandChanged(LECTURE_COMMAND);
      },
    });
    palette?.addItem({ command: LECTURE_COMMAND, category: "attnwidgets" });
    menu?.viewMenu.addGroup([{ command: LECTURE_COMMAND }], 60);
    notebooks?.widgetAdded.connect((_sender, panel) => {
      const button = new ToolbarButton({
        label: "Lecture",
        tooltip: "Lecture mode: large fonts and the views' lecture theme",
        pressedTooltip: "Leave lecture mode",
        pressed: mode.on,
        onClick: () => void app.commands.execute(LECTURE_COMMAND),
      });
      button.node.dataset.testid = "aw-lecture-toggle";
      buttons.add(button);
      button.disposed.connect(() => buttons.delete(button));
      panel.toolbar.insertItem(10, "attnwidgets-lecture", button);
    });
    // `attnwidgets lab --lecture` (attnwidgets/lab.py LECTURE_ENV): the server part says so, and the session starts
    // in lecture mode, the same mode the command toggles (it set JupyterLab's theme overrides, which left the prompt
    // column narrow and which the toggle could not turn off).
    void app.restored.then(async () => {
      try {
        const settings = app.serviceManager.serverSettings;
        const url = `${settings.baseUrl.replace(/\/$/, "")}/attnwidgets/lecture`;
        const reply = await ServerConnection.makeRequest(url, {}, settings);
        const answer = reply.ok ? ((await reply.json()) as { lecture?: unknown }) : {};
        if (answer.lecture === true && !mode.on) await app.commands.execute(LECTURE_COMMAND);
      } catch {
        // no server part (a Jupyter without it): a plain start, as before
      }
    });
  },
};

export const launcherPlugin: JupyterFrontEndPlugin<void> = {
  id: "attnwidgets:tutorials-launcher",
  description: "A Launcher card that copies the attnwidgets tutorials and opens notebook 05.",
  autoStart: true,
  optional: [ILauncher, ICommandPalette],
  activate: (app: JupyterFrontEnd, launcher: ILauncher | null, palette: ICommandPalette | null) => {
    app.commands.addCommand(TUTORIALS_COMMAND, {
      label: "attnwidgets tutorials",
      caption: "Copy the attnwidgets tutorials into attnwidgets-tutorials/ (edits kept) and open notebook 05",
      icon: notebookIcon,
      execute: async () => {
        const settings = app.serviceManager.serverSettings;
        const url = `${settings.baseUrl.replace(/\/$/, "")}/attnwidgets/tutorials`;
        const reply = await ServerConnection.makeRequest(url, { method: "POST" }, settings);
        const answer = (await reply.json()) as { open?: string; error?: string };
        if (!reply.ok || !answer.open)
          throw new Error(answer.error ?? `could not copy the tutorials (${reply.status})`);
        return app.commands.execute("docmanager:open", { path: answer.open });
      },
    });
    launcher?.add({ command: TUTORIALS_COMMAND, category: "Notebook", rank: 90 });
    palette?.addItem({ command: TUTORIALS_COMMAND, category: "attnwidgets" });
  },
};
