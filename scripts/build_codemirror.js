// The entry of the room's editor bundle (scripts/build_codemirror.sh bundles it).
// What lockshop/room/static/room.js imports from vendor/codemirror/codemirror.js:
// a CodeMirror 6 editor with Python, where Tab indents and Shift-Tab dedents.
import {basicSetup} from "codemirror";
import {EditorView, keymap} from "@codemirror/view";
import {EditorState} from "@codemirror/state";
import {indentWithTab} from "@codemirror/commands";
import {indentUnit} from "@codemirror/language";
import {python} from "@codemirror/lang-python";

/** An editor in `parent` holding `doc`; `onChange(text)` after every edit. */
export function pythonEditor(parent, doc, onChange) {
  return new EditorView({
    parent,
    state: EditorState.create({
      doc,
      extensions: [
        basicSetup,
        // Tab indents; a keyboard user leaves the editor with Escape, then Tab.
        keymap.of([indentWithTab]),
        indentUnit.of("    "),
        python(),
        EditorView.updateListener.of((update) => {
          if (update.docChanged) onChange(update.state.doc.toString());
        }),
      ],
    }),
  });
}

export {EditorView, EditorState};
