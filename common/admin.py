"""Admin building blocks shared by the apps."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest
from django.template.response import TemplateResponse
from django.urls import path


class ReadOnlyAdmin(admin.ModelAdmin):
    """An admin that lists and shows rows but never adds or changes them (a log)."""

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False


class ReportAdmin(admin.ModelAdmin):
    """An admin with one staff report page beside its change list.

    The page is at ``<change list>/<report_path>``, named ``report_url_name``, shown to
    whoever may view the model's rows, and rendered from ``report_template`` with the admin's
    context plus ``report_context(request)``.
    """

    report_path = "spend/"
    report_url_name = ""
    report_template = ""

    def get_urls(self) -> list:
        report = self.admin_site.admin_view(self.report_view)
        return [path(self.report_path, report, name=self.report_url_name), *super().get_urls()]

    def report_view(self, request: HttpRequest) -> TemplateResponse:
        if not self.has_view_permission(request):
            raise PermissionDenied
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            **self.report_context(request),
        }
        return TemplateResponse(request, self.report_template, context)

    def report_context(self, request: HttpRequest) -> dict[str, Any]:
        """The page's own context: at least its ``title``."""
        raise NotImplementedError
