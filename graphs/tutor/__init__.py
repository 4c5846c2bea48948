"""The note-taking tutor: answers from the project's notes and edits notes only with consent."""
