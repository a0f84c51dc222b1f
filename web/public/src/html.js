// htm gives Preact JSX-like templates at run time: no compiler, no build step.
import { h } from 'preact';
import htm from 'htm';

export const html = htm.bind(h);
