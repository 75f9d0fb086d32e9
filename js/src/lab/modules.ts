// Every view's front end, by bundle name (js/src/views/<name>/): the modules the extension draws saved states with,
// in a notebook's outputs (index.ts) and in the document of a file aw.save wrote (saved_file.ts).

import type { ViewModules } from "../shared/saved_view";
import ablation from "../views/ablation/index";
import compare from "../views/compare/index";
import entropy_bars from "../views/entropy_bars/index";
import fill_mask from "../views/fill_mask/index";
import generation from "../views/generation/index";
import head_cluster_map from "../views/head_cluster_map/index";
import head_stats_grid from "../views/head_stats_grid/index";
import head_view from "../views/head_view/index";
import heatmap from "../views/heatmap/index";
import mask_explorer from "../views/mask_explorer/index";
import model_view from "../views/model_view/index";
import positional from "../views/positional/index";
import profile from "../views/profile/index";
import qk from "../views/qk/index";
import qk_space from "../views/qk_space/index";
import routers from "../views/routers/index";

export const MODULES = {
  ablation,
  compare,
  entropy_bars,
  fill_mask,
  generation,
  head_cluster_map,
  head_stats_grid,
  head_view,
  heatmap,
  mask_explorer,
  model_view,
  positional,
  profile,
  qk,
  qk_space,
  routers,
} as unknown as ViewModules;
