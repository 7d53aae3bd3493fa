"""The words the build puts on pages, per language of the page."""

from __future__ import annotations

from resnorm_site.paths import DEFAULT_LANGUAGE

LABELS = {
    "en": {
        "running": (
            "**This notebook is being executed**, because the site is served for the first "
            "time or its code changed. The page reloads by itself when the run is done; "
            "nothing from an earlier run is shown in the meantime."
        ),
        "failed": "**This notebook failed to execute**: {failure}. The console says more.",
        "measuring": "*(being measured: the notebook is still executing)*",
        "imports": "Code this notebook imports:",
        "collapsed": "The code of this cell ({lines} lines)",
        "collapsed_output": "The output of this cell ({lines} lines)",
        "cont": "Continues the code above: run that block first.",
        "output": "Output",
        "diagram": "Diagram",
        "copy": "Copy to clipboard",
    },
    "zh": {
        "running": (
            "**这个 notebook 正在执行**：站点第一次启动，或者它的代码改了。运行结束后页面会"
            "自动刷新；在此之前不会显示任何旧的运行结果。"
        ),
        "failed": "**这个 notebook 执行失败**：{failure}。详情见控制台输出。",
        "measuring": "*（正在测量：notebook 仍在执行）*",
        "imports": "本 notebook 导入的代码：",
        "collapsed": "本单元的代码（{lines} 行）",
        "collapsed_output": "本单元的输出（{lines} 行）",
        "cont": "接续上面的代码：请先运行上一个代码块。",
        "output": "输出",
        "diagram": "图示",
        "copy": "复制到剪贴板",
    },
}


def language(theme_language: str | None) -> str:
    """The page language for a theme language; the default one for any other."""
    return theme_language if theme_language in LABELS else DEFAULT_LANGUAGE


def label(lang: str, name: str) -> str:
    return LABELS[language(lang)][name]
